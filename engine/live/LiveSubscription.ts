/**
 * One subscriber of live events with a bounded queue. The queue is the connection's own send
 * buffer (bytes written but not yet taken by the network): an event that would push it past
 * `maxBufferedBytes` means the client does not keep up, so it is told (`overflow`) and dropped, and
 * the server never holds more than about that much for it (docs/live.md "Slow consumers").
 *
 * Frames are not written one by one: they wait in a LiveOutbox until the I/O of the current turn
 * of the event loop is handled, then leave in one write per connection. The hub fans out one
 * partition's batch at a time, so with 1 000 subscribers and 8 partitions read in the same turn
 * that is 1 000 writes instead of 8 000 (or, one per event, tens of thousands).
 */
import type { HubEvent, LiveCloseReason, LiveFrame, LiveSubscriber } from './liveTypes.ts';

export type { LiveCloseReason, LiveFrame, LiveSubscriber } from './liveTypes.ts';

/** How frames reach one connection (SSE response, WebSocket). */
export interface LiveTransport<F extends LiveFrame = string> {
  /**
   * Writes frames in order, all at once: SSE joins them into one write (a text stream); a
   * WebSocket sends a message each, in one write of its socket (corked meanwhile).
   */
  write(frames: readonly F[]): void;
  /** Bytes written and not yet sent. */
  buffered(): number;
  /** Closes the connection after what was written (a final frame may precede). */
  end(reason: LiveCloseReason): void;
}

/** The wire form of each frame (SSE or WebSocket, see docs/live.md). */
export interface LiveFormat<F extends LiveFrame = string> {
  event(event: HubEvent): F;
  reset(): F;
  overflow(): F;
}

export interface LiveSubscriptionOptions<F extends LiveFrame = string> {
  transport: LiveTransport<F>;
  format: LiveFormat<F>;
  /** Send-buffer bytes past which the subscriber is dropped. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Told when the subscriber is dropped for being slow. */
  onOverflow?(): void;
  /** Where waiting frames are gathered. Default: one outbox shared by every subscription of the process. */
  outbox?: LiveOutbox;
}

/**
 * Subscriptions with frames waiting, written together once per turn of the event loop: after the
 * I/O callbacks of the turn (setImmediate), so every batch read in that turn — one per partition —
 * leaves in the same write of each connection; one scheduled callback for all the subscriptions.
 */
export class LiveOutbox {
  readonly #schedule: (run: () => void) => void;
  #waiting: Array<() => void> = [];

  constructor(schedule: (run: () => void) => void = (run) => { setImmediate(run); }) {
    this.#schedule = schedule;
  }

  /** `flush` runs once, at the next flush of the outbox. */
  add(flush: () => void): void {
    if (this.#waiting.push(flush) === 1) this.#schedule(() => this.flush());
  }

  flush(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const flush of waiting) flush();
  }
}

const sharedOutbox = new LiveOutbox();

export class LiveSubscription<F extends LiveFrame = string> implements LiveSubscriber {
  readonly #o: LiveSubscriptionOptions<F>;
  readonly #max: number;
  #open = true;
  readonly #outbox: LiveOutbox;
  readonly #flushLater = () => this.#flush();
  #pending: F[] = [];
  #pendingBytes = 0;
  sent = 0;

  constructor(options: LiveSubscriptionOptions<F>) {
    this.#o = options;
    this.#max = options.maxBufferedBytes ?? 1024 * 1024;
    this.#outbox = options.outbox ?? sharedOutbox;
  }

  get open(): boolean {
    return this.#open;
  }

  send(event: HubEvent): boolean {
    if (!this.#open) return false;
    const format = this.#o.format;
    // Keyed by the format: a frame found under it is of its type.
    let frame = event.frames.get(format) as F | undefined;
    if (frame === undefined) event.frames.set(format, frame = format.event(event));
    if (this.#o.transport.buffered() + this.#pendingBytes + frame.length > this.#max) {
      this.#pending.push(this.#o.format.overflow());
      this.#flush();
      this.#open = false;
      this.#o.transport.end('overflow');
      this.#o.onOverflow?.();
      return false;
    }
    this.sent++;
    this.#queue(frame);
    return true;
  }

  reset(): void {
    if (!this.#open) return;
    this.#queue(this.#o.format.reset());
  }

  #queue(frame: F): void {
    this.#pending.push(frame);
    this.#pendingBytes += frame.length;
    if (this.#pending.length === 1) this.#outbox.add(this.#flushLater);
  }

  close(reason: LiveCloseReason): void {
    if (!this.#open) return;
    this.#flush();
    this.#open = false;
    this.#o.transport.end(reason);
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const frames = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (!this.#open) return;
    try {
      this.#o.transport.write(frames);
    } catch {
      // A broken connection ends its subscription (the hub drops it at its next event); it must
      // not stop the outbox from writing to the others.
      this.#open = false;
    }
  }

  /** The connection went away on its own. */
  detach(): void {
    this.#open = false;
    this.#pending = [];
    this.#pendingBytes = 0;
  }
}
