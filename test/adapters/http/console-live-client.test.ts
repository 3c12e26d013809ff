/**
 * The console's own logic, run in Node on the very modules the browser loads: its SSE reader
 * (console/live.js) against a real HTTP server that splits events at awkward places, uses CRLF,
 * comments and multi-line data, drops the connection and sends `overflow` and `reset`; and the
 * profile check of the command form (console/command.js). The token goes in the Authorization
 * header, and the reconnect carries Last-Event-ID.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as assert from 'uvu/assert';
import { test } from '../../support/suite.ts';
import { waitFor } from '../../support/tmp.ts';

// The console keeps its token in sessionStorage; Node has none, so the test gives it one.
const store = new Map<string, string>();
(globalThis as any).sessionStorage = { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => store.set(k, v), removeItem: (k: string) => store.delete(k) };

const { follow } = await import('../../../console/live.js' as string) as { follow(path: string, o: Record<string, unknown>): void };
const { profileProblem } = await import('../../../console/command.js' as string) as { profileProblem(p: unknown, v: unknown): string | undefined };
const { resolutionFor } = await import('../../../console/asset.js' as string) as { resolutionFor(ms: number): string | undefined };

interface Seen { headers: IncomingMessage['headers'] }

async function serve(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<{ base: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ headers: req.headers });
    handler(req, res, seen.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, seen, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

test('events split across chunks, CRLF, comments and multi-line data are read; a dropped stream resumes with Last-Event-ID', async () => {
  store.set('fleetstream.token', 'fsu_test');
  const srv = await serve((req, res, n) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (n === 1) {
      const text = ': keep-alive\r\n\r\nid: c1\r\nevent: state\r\ndata: {"deviceId":"d","asset":"t","value":1}\r\n\r\n'
        + 'id: c2\nevent: rejection\ndata: {"code":"PROFILE_VIOLATION",\ndata: "reason":"x"}\n\n' + 'id: c3\nevent: state\ndata: {"value":';
      // Byte by byte in places: an event may end anywhere in a chunk.
      let i = 0;
      const timer = setInterval(() => {
        const step = i < 40 ? 1 : 30;
        res.write(text.slice(i, i + step));
        i += step;
        if (i >= text.length) { clearInterval(timer); res.destroy(); }
      }, 1);
    } else {
      res.write('id: c4\nevent: command\ndata: {"commandId":"x","status":"delivered"}\n\n');
    }
  });
  const events: Array<[string, unknown]> = [];
  const statuses: string[] = [];
  const abort = new AbortController();
  try {
    follow(`${srv.base}/device/d/live?kinds=state,rejection,command`, { signal: abort.signal, onEvent: (k: string, d: unknown) => events.push([k, d]), onStatus: (s: string) => statuses.push(s) });
    await waitFor(() => events.length === 3, 10_000, 'three events');
    assert.equal(events, [
      ['state', { deviceId: 'd', asset: 't', value: 1 }],
      ['rejection', { code: 'PROFILE_VIOLATION', reason: 'x' }],
      ['command', { commandId: 'x', status: 'delivered' }],
    ], 'the cut-off event c3 is not delivered half');
    assert.is(srv.seen[0].headers.authorization, 'Bearer fsu_test');
    assert.is(srv.seen[0].headers['last-event-id'], undefined);
    assert.is(srv.seen[1].headers['last-event-id'], 'c2', 'resumes after the last complete event');
    assert.ok(statuses.includes('reconnecting'));
  } finally {
    abort.abort();
    await srv.close();
  }
});

test('overflow reconnects with the last id; reset asks the page to reload; a refusal stops with the API\'s message', async () => {
  const srv = await serve((req, res, n) => {
    if (n === 3) {
      res.writeHead(403, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Forbidden', status: 403, code: 'FORBIDDEN', detail: 'not a member of the ground of this device' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (n === 1) res.end('id: a9\nevent: state\ndata: {"value":9}\n\nevent: overflow\ndata: {}\n\n');
    else res.end('event: reset\ndata: {}\n\nid: b1\nevent: state\ndata: {"value":10}\n\n');
  });
  const events: unknown[] = [];
  const statuses: string[] = [];
  let resets = 0;
  const abort = new AbortController();
  try {
    follow(`${srv.base}/ground/g/live`, { signal: abort.signal, onEvent: (_k: string, d: unknown) => events.push(d), onReset: () => resets++, onStatus: (s: string) => statuses.push(s) });
    await waitFor(() => statuses.some((s) => s.startsWith('not live')), 15_000, 'the refusal');
    assert.equal(events, [{ value: 9 }, { value: 10 }]);
    assert.is(resets, 1);
    assert.is(srv.seen[1].headers['last-event-id'], 'a9');
    assert.is(srv.seen[2].headers['last-event-id'], 'b1');
    assert.is(statuses.at(-1), 'not live: not a member of the ground of this device');
    assert.is(srv.seen.length, 3, 'no retry after a refusal');
  } finally {
    abort.abort();
    await srv.close();
  }
});

test('a stream that never ends its line is dropped at 1 MiB and followed again, not buffered without end', async () => {
  let sent = 0;
  const srv = await serve((req, res, n) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (n > 1) { res.end('id: z\nevent: state\ndata: {"value":1}\n\n'); return; }
    const chunk = 'x'.repeat(64 * 1024);
    const push = () => {
      while (sent < 4 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
      if (sent < 4 * 1024 * 1024) res.once('drain', push);
    };
    push();
    res.on('close', () => undefined);
  });
  const events: unknown[] = [];
  const abort = new AbortController();
  try {
    follow(`${srv.base}/device/d/live`, { signal: abort.signal, onEvent: (_k: string, d: unknown) => events.push(d) });
    await waitFor(() => events.length === 1, 15_000, 'the next connection\'s event');
    assert.ok(sent < 4 * 1024 * 1024, `the reader stopped reading (${sent} bytes sent)`);
    assert.is(srv.seen.length, 2);
  } finally {
    abort.abort();
    await srv.close();
  }
});

test('the command form checks a value against the profile before sending', () => {
  assert.is(profileProblem({ type: 'integer', minimum: 0, maximum: 100 }, 42), undefined);
  assert.is(profileProblem({ type: 'integer', minimum: 0, maximum: 100 }, 500), 'must be at most 100');
  assert.is(profileProblem({ type: 'integer', minimum: 0 }, -1), 'must be at least 0');
  assert.is(profileProblem({ type: 'integer' }, 1.5), 'must be an integer');
  assert.is(profileProblem({ type: 'number' }, Number.NaN), 'must be a number');
  assert.is(profileProblem({ type: 'boolean' }, 'true'), 'must be true or false');
  assert.is(profileProblem({ type: 'string', enum: ['on', 'off'] }, 'dim'), 'must be one of "on", "off"');
  assert.is(profileProblem({ type: 'string', enum: ['on', 'off'] }, 'on'), undefined);
  assert.is(profileProblem({ type: 'object' }, { any: 'thing' }), undefined, 'objects are left to the API');
});

test('history: raw points up to 6 hours, hourly aggregates up to 14 days, daily beyond', () => {
  const hour = 3_600_000;
  assert.is(resolutionFor(hour), undefined);
  assert.is(resolutionFor(6 * hour), undefined);
  assert.is(resolutionFor(24 * hour), 'hour');
  assert.is(resolutionFor(14 * 24 * hour), 'hour');
  assert.is(resolutionFor(30 * 24 * hour), 'day');
});

test.run();
