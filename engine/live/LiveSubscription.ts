/**
 * One subscriber of live events with a bounded queue. The queue is the connection's own send
 * buffer (bytes written but not yet taken by the network): an event that would push it past
 * `maxBufferedBytes` means the client does not keep up, so it is told (`overflow`) and dropped, and
 * the server never holds more than about that much for it (docs/live.md "Slow consumers").
 */
import type { HubEvent } from './LiveHub.ts';

export interface LiveSubscriber {
  /** false: the subscriber is gone (overflowed or closed) and must not be called again. */
  send(event: HubEvent): boolean;
  /** The resume point is gone: the client reloads from the REST API, live events follow. */
  reset(): void;
  /** The server ends the stream: shutting down, or access withdrawn. */
  close(reason: LiveCloseReason): void;
}

export type LiveCloseReason = 'overflow' | 'closing' | 'forbidden';

/** How frames reach one connection (SSE response, WebSocket). */
export interface LiveTransport {
  write(frame: string): void;
  /** Bytes written and not yet sent. */
  buffered(): number;
  /** Closes the connection after what was written (a final frame may precede). */
  end(reason: LiveCloseReason): void;
}

/** The wire form of each frame (SSE or WebSocket, see docs/live.md). */
export interface LiveFormat {
  /**
   * Frames may be concatenated into one write (SSE: a text stream). The events the hub fans out in
   * one go then cost one write per connection instead of one each: with 1 000 subscribers, that is
   * the difference between a syscall per event per subscriber and one per batch.
   */
  joinable?: boolean;
  event(event: HubEvent): string;
  reset(): string;
  overflow(): string;
}

export interface LiveSubscriptionOptions {
  transport: LiveTransport;
  format: LiveFormat;
  /** Send-buffer bytes past which the subscriber is dropped. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Told when the subscriber is dropped for being slow. */
  onOverflow?(): void;
}

export class LiveSubscription implements LiveSubscriber {
  readonly #o: LiveSubscriptionOptions;
  readonly #max: number;
  #open = true;
  #pending: string[] = [];
  #pendingBytes = 0;
  sent = 0;

  constructor(options: LiveSubscriptionOptions) {
    this.#o = options;
    this.#max = options.maxBufferedBytes ?? 1024 * 1024;
  }

  get open(): boolean {
    return this.#open;
  }

  send(event: HubEvent): boolean {
    if (!this.#open) return false;
    const format = this.#o.format;
    let frame = event.frames.get(format);
    if (frame === undefined) event.frames.set(format, frame = format.event(event));
    if (this.#o.transport.buffered() + this.#pendingBytes + frame.length > this.#max) {
      this.#flush();
      this.#open = false;
      this.#o.transport.write(this.#o.format.overflow());
      this.#o.transport.end('overflow');
      this.#o.onOverflow?.();
      return false;
    }
    this.sent++;
    if (this.#o.format.joinable !== true) {
      this.#o.transport.write(frame);
      return true;
    }
    this.#pending.push(frame);
    this.#pendingBytes += frame.length;
    if (this.#pending.length === 1) queueMicrotask(() => this.#flush());
    return true;
  }

  reset(): void {
    if (!this.#open) return;
    this.#flush();
    this.#o.transport.write(this.#o.format.reset());
  }

  close(reason: LiveCloseReason): void {
    if (!this.#open) return;
    this.#flush();
    this.#open = false;
    this.#o.transport.end(reason);
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0] : this.#pending.join('');
    this.#pending = [];
    this.#pendingBytes = 0;
    if (this.#open) this.#o.transport.write(text);
  }

  /** The connection went away on its own. */
  detach(): void {
    this.#open = false;
    this.#pending = [];
    this.#pendingBytes = 0;
  }
}
