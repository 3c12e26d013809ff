/**
 * Clients of the live streams as real clients use them: SSE read from fetch()'s streamed body with
 * the token in the Authorization header (as the console does), a raw TCP client that never reads,
 * and a WebSocket client (`ws`) that keeps every frame it receives.
 */
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
  /** performance.now() when it arrived. */
  arrivedAt: number;
}

export interface SseStream {
  status: number;
  contentType: string;
  /** The problem+json of a refused request. */
  problem?: { code: string; status: number; detail: string };
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, token: string | undefined, headers: Record<string, string> = {}): Promise<SseStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const stream: SseStream = {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    events: [],
    comments: [],
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (res.status !== 200) {
    stream.problem = await res.json() as SseStream['problem'];
    return stream;
  }
  const body = res.body!.pipeThrough(new TextDecoderStream());
  stream.ended = (async () => {
    let buffer = '';
    let current: { id?: string; event: string; data: string[] } = { event: 'message', data: [] };
    try {
      for await (const chunk of body) {
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline).replace(/\r$/, '');
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (current.data.length > 0) stream.events.push({ id: current.id, event: current.event, data: current.data.join('\n'), arrivedAt: performance.now() });
            current = { event: 'message', data: [] };
          } else if (line.startsWith(':')) {
            stream.comments.push(line.slice(1).trim());
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
          }
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return stream;
}

/** A client that sends the request and then never reads: the server's send buffer fills up. */
export function neverReadingSse(port: number, path: string, token: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\naccept: text/event-stream\r\n\r\n`);
      // Read nothing more: the kernel's receive buffer fills, then the server's send buffer.
      socket.pause();
      resolve(socket);
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

export interface WsClient {
  ws: WebSocket;
  frames: Array<Record<string, unknown>>;
  closed: Promise<{ code: number; reason: string }>;
  send(frame: unknown): void;
  /** The first frame after `from` that matches. */
  next(predicate: (frame: Record<string, unknown>) => boolean, timeoutMs?: number, from?: number): Promise<Record<string, unknown>>;
}

export async function openWs(url: string): Promise<WsClient> {
  const ws = new WebSocket(url);
  const frames: Array<Record<string, unknown>> = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  ws.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  return {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    async next(predicate, timeoutMs = 10_000, from = 0) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = frames.slice(from).find(predicate);
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(frames).slice(0, 500)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}
