// Live events over SSE (GET /device/{id}/live, /ground/{id}/live) read with fetch() so the token
// travels in the Authorization header, never in a URL as EventSource would need. Reconnects with
// Last-Event-ID after a drop or an `overflow`; `reset` tells the page to reload from the REST API.
import { authHeaders, readProblem, problemMessage } from './api.js';

const MAX_BACKOFF_MS = 15_000;
const MAX_LINE = 1 << 20;

/**
 * Follows `path` until `signal` aborts. Callbacks: onEvent(kind, data), onReset(), onStatus(text)
 * where text is 'live', 'reconnecting', or a reason it stopped.
 */
export function follow(path, { signal, onEvent, onReset = () => {}, onStatus = () => {} }) {
  let lastId;
  let backoff = 1000;
  const run = async () => {
    while (!signal.aborted) {
      try {
        const headers = authHeaders({ accept: 'text/event-stream' });
        if (lastId !== undefined) headers['last-event-id'] = lastId;
        const response = await fetch(path, { headers, signal, cache: 'no-store' });
        if (!response.ok) {
          const problem = await readProblem(response);
          // Refused for good (token, membership, no live endpoint): say why and stop.
          if (response.status === 404 && problem?.code === 'NOT_FOUND' && /^no route /.test(problem.detail ?? '')) { onStatus('not live: this server has no live stream'); return; }
          if ([401, 403, 404].includes(response.status)) { onStatus(`not live: ${problemMessage(response.status, problem)}`); return; }
          throw new Error(problemMessage(response.status, problem));
        }
        onStatus('live');
        backoff = 1000;
        await readEvents(response.body, signal, (event) => {
          if (event.id !== undefined) lastId = event.id;
          if (event.type === 'reset') onReset();
          else if (event.type === 'overflow') onStatus('reconnecting');
          else if (event.data !== undefined) {
            try { onEvent(event.type, JSON.parse(event.data)); } catch { /* a line that is not JSON is not ours */ }
          }
        });
      } catch (error) {
        if (signal.aborted) return;
      }
      if (signal.aborted) return;
      onStatus('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  };
  run();
}

/** The text/event-stream format (HTML standard §9.2): fields per line, events end at a blank line. */
async function readEvents(body, signal, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = {};
  try {
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      // One event is one JSON line: a line this long is not ours, and the tab's memory stays bounded.
      if (buffer.length > MAX_LINE) throw new Error('an event line over 1 MiB');
      let end;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A CR last in the chunk may be the first half of a CRLF split across chunks: wait.
        if (buffer[end] === '\r' && end === buffer.length - 1) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (event.type !== undefined || event.data !== undefined) emit({ type: event.type ?? 'message', ...event });
          event = {};
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const data = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event.type = data;
        else if (field === 'data') event.data = event.data === undefined ? data : `${event.data}\n${data}`;
        else if (field === 'id') event.id = data;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
