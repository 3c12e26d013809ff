/**
 * Live-stream subscribers for bench/live.bench.ts, run in worker threads of their own so the
 * figures measure the edge and not the thread that also generates the load. Each thread holds a
 * share of the subscribers (SSE over node:http, or `ws` clients), counts the `"value":<n>` it
 * receives and times them against the send time the load generator wrote in a shared array.
 *
 * Messages (request → one reply): open, count, mark, latencies, stats, close.
 */
import { Agent, request, type IncomingMessage } from 'node:http';
import { parentPort, Worker } from 'node:worker_threads';
import WebSocket from 'ws';

/** Send times by value (slot 1 + value % SENT_SLOTS); slot 0 holds the first value timed. */
export const SENT_SLOTS = 1 << 21;

/** Milliseconds on a clock every thread of the process shares. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export interface ThreadStats {
  elu: ReturnType<typeof performance.eventLoopUtilization>;
  /** This thread's CPU time, µs. */
  cpu: number;
}

export function threadStats(): ThreadStats {
  const { user, system } = process.threadCpuUsage();
  return { elu: performance.eventLoopUtilization(), cpu: user + system };
}

export type ClientRequest =
  | { op: 'open'; kind: 'sse' | 'ws'; port: number; token: string; grounds: string[] }
  | { op: 'count' }
  | { op: 'mark' }
  | { op: 'latencies' }
  | { op: 'stats' }
  | { op: 'close' };

/** One thread of subscribers, driven from the bench's main thread. */
export class ClientThread {
  readonly #worker: Worker;
  #replies: Array<(value: any) => void> = [];

  constructor(sent: SharedArrayBuffer) {
    this.#worker = new Worker(new URL(import.meta.url), { workerData: sent });
    this.#worker.on('message', (reply) => this.#replies.shift()?.(reply));
    this.#worker.on('error', (error) => { console.error(error); process.exit(1); });
  }

  ask<T>(request: ClientRequest): Promise<T> {
    return new Promise<T>((resolve) => {
      this.#replies.push(resolve);
      this.#worker.postMessage(request);
    });
  }

  terminate(): Promise<number> {
    return this.#worker.terminate();
  }
}

interface Subscriber {
  received: number;
  mark: number;
  close(): void;
}

const VALUE = /"value":(\d+)/g;

type Record = (sub: Subscriber, text: string) => void;

/** An SSE subscriber of the ground's states; `record` gets the text of its complete events. */
function sse(agent: Agent, port: number, token: string, ground: string, record: Record): Promise<Subscriber> {
  return new Promise<Subscriber>((resolve, reject) => {
    const sub: Subscriber = { received: 0, mark: 0, close: () => undefined };
    let carry = '';
    const req = request({ agent, host: '127.0.0.1', port, path: `/ground/${ground}/live?kinds=state`, headers: { authorization: `Bearer ${token}` } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) { reject(new Error(`SSE ${res.statusCode}`)); return; }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        // An event may be split across chunks: keep the tail after the last complete event.
        const text = carry + chunk;
        const cut = text.lastIndexOf('\n\n');
        if (cut < 0) { carry = text; return; }
        carry = text.slice(cut + 2);
        record(sub, text.slice(0, cut));
      });
      res.on('error', () => undefined);
      sub.close = () => req.destroy();
      resolve(sub);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A WebSocket subscriber of the ground's states, resolved once subscribed; `record` gets each state message. */
function ws(port: number, token: string, ground: string, record: Record): Promise<Subscriber> {
  return new Promise<Subscriber>((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/live`, { perMessageDeflate: false });
    const sub: Subscriber = { received: 0, mark: 0, close: () => socket.terminate() };
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token }));
      socket.send(JSON.stringify({ type: 'subscribe', ground, kinds: ['state'] }));
    });
    socket.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('{"type":"state"')) record(sub, text);
      else if (text.startsWith('{"type":"subscribed"')) resolve(sub);
      else if (text.startsWith('{"type":"error"') || text.startsWith('{"type":"overflow"')) reject(new Error(text));
    });
  });
}

async function clientThread(sentBuffer: SharedArrayBuffer): Promise<void> {
  const sent = new Float64Array(sentBuffer);
  const subscribers: Subscriber[] = [];
  let latencies: number[] = [];
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

  const record = (sub: Subscriber, text: string) => {
    const at = now();
    const timedAfter = sent[0];
    for (const match of text.matchAll(VALUE)) {
      sub.received++;
      const value = Number(match[1]);
      if (value > timedAfter) latencies.push(at - sent[1 + (value % SENT_SLOTS)]);
    }
  };

  parentPort!.on('message', async (message: ClientRequest) => {
    switch (message.op) {
      case 'open': {
        const open = (port: number, token: string, ground: string) => (message.kind === 'sse' ? sse(agent, port, token, ground, record) : ws(port, token, ground, record));
        // 100 at a time: a thousand handshakes at once overflow the listen backlog.
        for (let i = 0; i < message.grounds.length; i += 100) {
          subscribers.push(...await Promise.all(message.grounds.slice(i, i + 100).map((ground) => open(message.port, message.token, ground))));
        }
        return parentPort!.postMessage(subscribers.length);
      }
      case 'count': {
        let total = 0;
        let min = Infinity;
        for (const s of subscribers) { total += s.received; min = Math.min(min, s.received - s.mark); }
        return parentPort!.postMessage({ total, min });
      }
      case 'mark':
        for (const s of subscribers) s.mark = s.received;
        latencies = [];
        return parentPort!.postMessage(true);
      case 'latencies': {
        const out = Float64Array.from(latencies);
        latencies = [];
        return parentPort!.postMessage(out, [out.buffer]);
      }
      case 'stats':
        return parentPort!.postMessage(threadStats());
      case 'close':
        for (const s of subscribers) s.close();
        subscribers.length = 0;
        return parentPort!.postMessage(true);
    }
  });
}

const { isMainThread, workerData } = await import('node:worker_threads');
if (!isMainThread && workerData instanceof SharedArrayBuffer) await clientThread(workerData);
