/**
 * Calls between an embedded primary and its edge workers over the cluster IPC channel
 * (app/edgeWorkers.ts): each side serves objects by name and calls the other's, a call answered
 * with its value or its FleetError (code, message, detail and retriability cross intact). Values
 * cross as structured clones (the `advanced` serialization: byte arrays stay byte arrays).
 *
 * The calls and replies one side sends during an event-loop turn leave together, once that turn's
 * I/O callbacks have run (setImmediate), as one IPC message: a worker answering many HTTP requests
 * per turn makes one write to the primary for their appends, and the primary one for its replies,
 * not one each. A note leaves at once, with what was queued before it: a registry change reaches
 * the workers before the caller that made it goes on (a revocation, then a new connection on a
 * worker, must find the token revoked). Order is kept: messages arrive in the order they were sent.
 */
import { FleetError, toFleetError, type ErrorCode } from '../engine/kernel/errors.ts';

export interface IpcPort {
  send(message: unknown): unknown;
  on(event: 'message', listener: (message: unknown, handle?: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
  /** The other process is gone (its IPC channel closed). */
  once(event: 'disconnect', listener: () => void): unknown;
}

type Handler = (path: readonly string[], args: unknown[]) => unknown;

interface Call { fw: 'call'; id: number; target: string; path: string[]; args: unknown[] }
interface Reply { fw: 'reply'; id: number; value?: unknown; error?: { code: string; message: string; detail?: Record<string, unknown>; retriable: boolean } }
interface Note { fw: 'note'; name: string; value: unknown }
type Message = Call | Reply | Note;
/** The messages of one turn. */
interface Batch { fw: 'batch'; messages: Message[] }

/** Thrown by a call the other side never answered: it went away, or the channel closed. */
const gone = (what: string) => new FleetError('UNAVAILABLE', `${what}: the other process of the edge is gone`);

export class WorkerChannel {
  readonly #port: IpcPort;
  readonly #handlers = new Map<string, Handler>();
  readonly #notes = new Map<string, (value: unknown) => void>();
  readonly #waiting = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  readonly #listener = (message: unknown) => this.#receiveSent(message as Message | Batch);
  /** Sent this turn, leaving at its end. */
  #outbox: Message[] = [];
  #flush: NodeJS.Immediate | undefined;
  #next = 1;
  #closed = false;

  constructor(port: IpcPort) {
    this.#port = port;
    port.on('message', this.#listener);
    port.once('disconnect', () => this.close());
  }

  /** Answers calls of `target` by walking `path` from `object` and calling what it finds there. */
  serve(target: string, object: object): void {
    this.handle(target, (path, args) => {
      let owner: Record<string, unknown> = object as Record<string, unknown>;
      for (const key of path.slice(0, -1)) owner = owner[key] as Record<string, unknown>;
      const fn = owner?.[path[path.length - 1]];
      if (typeof fn !== 'function') throw new FleetError('INTERNAL', `${target}.${path.join('.')} is not callable`);
      return (fn as (...a: unknown[]) => unknown).apply(owner, args);
    });
  }

  handle(target: string, handler: Handler): () => void {
    this.#handlers.set(target, handler);
    return () => this.#handlers.delete(target);
  }

  onNote(name: string, listener: (value: unknown) => void): void {
    this.#notes.set(name, listener);
  }

  /** A one-way message, delivered in order with the calls and replies sent after it. */
  note(name: string, value: unknown): void {
    if (this.#closed) return;
    this.#send({ fw: 'note', name, value });
    this.#sendOutbox();
  }

  call(target: string, path: readonly string[], args: unknown[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(gone(`${target}.${path.join('.')}`));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#send({ fw: 'call', id, target, path: [...path], args });
    });
  }

  /** An object whose methods (at any depth: `store.commands.list`) are calls of `target`. */
  proxy<T>(target: string, path: readonly string[] = []): T {
    const call = (...args: unknown[]) => this.call(target, path, args);
    return new Proxy(call, {
      // Never a thenable: awaiting the proxy itself gives the proxy.
      get: (_fn, key) => (key === 'then' || typeof key === 'symbol' ? undefined : this.proxy(target, [...path, key])),
    }) as T;
  }

  /** Every call waiting for an answer fails UNAVAILABLE; what was not sent yet is not. */
  close(): void {
    this.#closed = true;
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#flush = undefined;
    this.#outbox = [];
    this.#port.off('message', this.#listener);
    for (const [id, waiting] of this.#waiting) {
      this.#waiting.delete(id);
      waiting.reject(gone('a call'));
    }
  }

  #send(message: Message): void {
    this.#outbox.push(message);
    this.#flush ??= setImmediate(() => this.#sendOutbox());
  }

  #sendOutbox(): void {
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#flush = undefined;
    const messages = this.#outbox;
    this.#outbox = [];
    if (this.#closed || messages.length === 0) return;
    try {
      this.#port.send(messages.length === 1 ? messages[0] : { fw: 'batch', messages } satisfies Batch);
    } catch (error) {
      // The channel is gone: the calls among them are never answered.
      for (const message of messages) {
        if (message.fw !== 'call') continue;
        const waiting = this.#waiting.get(message.id);
        this.#waiting.delete(message.id);
        waiting?.reject(toFleetError(error, 'UNAVAILABLE'));
      }
    }
  }

  #receiveSent(sent: Message | Batch): void {
    if (sent !== null && typeof sent === 'object' && sent.fw === 'batch' && Array.isArray(sent.messages)) {
      for (const message of sent.messages) this.#receive(message);
    } else {
      this.#receive(sent as Message);
    }
  }

  #receive(message: Message): void {
    if (message === null || typeof message !== 'object') return;
    if (message.fw === 'reply') {
      const waiting = this.#waiting.get(message.id);
      if (waiting === undefined) return;
      this.#waiting.delete(message.id);
      if (message.error === undefined) waiting.resolve(message.value);
      else waiting.reject(new FleetError(message.error.code as ErrorCode, message.error.message, { detail: message.error.detail, retriable: message.error.retriable }));
    } else if (message.fw === 'note') {
      this.#notes.get(message.name)?.(message.value);
    } else if (message.fw === 'call') {
      void this.#answer(message);
    }
  }

  async #answer(call: Call): Promise<void> {
    let reply: Reply;
    try {
      const handler = this.#handlers.get(call.target);
      if (handler === undefined) throw new FleetError('INTERNAL', `nothing serves ${call.target}`);
      reply = { fw: 'reply', id: call.id, value: await handler(call.path, call.args) };
    } catch (error) {
      const failure = toFleetError(error);
      reply = { fw: 'reply', id: call.id, error: { code: failure.code, message: failure.message, detail: failure.detail, retriable: failure.retriable } };
    }
    if (!this.#closed) this.#send(reply);
  }
}
