/**
 * MQTT framing ahead of any parsing: reads the fixed header and the Remaining Length varint
 * incrementally from socket chunks and refuses a declared size above the limit *before* a byte of
 * the body is kept, so no packet larger than the limit is ever buffered. Complete packets are handed
 * on as (first byte, body); a body lying whole inside one chunk is a view of it, not a copy.
 *
 * The limit is the whole packet (fixed header included), as MQTT 5 counts Maximum Packet Size
 * ([MQTT-3.1.2-24]); it may change between chunks (smaller until CONNECT is authenticated).
 */

export type FrameRefusal =
  /** The Remaining Length varint runs past four bytes ([MQTT-1.5.5-1]: malformed). */
  | { kind: 'malformed'; reason: string }
  /** The declared size exceeds the limit; nothing of the body was kept. */
  | { kind: 'too-large'; declared: number; limit: number };

export interface FrameSink {
  /** A complete packet; return false to stop reading the rest of the chunk (the connection is closing). */
  frame(first: number, body: Buffer): boolean;
}

const EMPTY = Buffer.alloc(0);

export class FrameReader {
  /** Largest packet accepted, bytes (fixed header included). */
  limit: number;
  #first = -1;
  #length = 0;
  #multiplier = 1;
  #lengthBytes = 0;
  /** Body being collected across chunks, allocated at the declared size (≤ limit). */
  #body: Buffer | undefined;
  #filled = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Bytes held for an incomplete packet (bounded by the limit). */
  get buffered(): number {
    return this.#body === undefined ? 0 : this.#filled;
  }

  /** Reads a chunk; returns a refusal when the stream must be closed, else undefined. */
  push(chunk: Buffer, sink: FrameSink): FrameRefusal | undefined {
    let pos = 0;
    const end = chunk.length;
    while (pos < end) {
      if (this.#body !== undefined) {
        const take = Math.min(end - pos, this.#body.length - this.#filled);
        chunk.copy(this.#body, this.#filled, pos, pos + take);
        this.#filled += take;
        pos += take;
        if (this.#filled < this.#body.length) return undefined;
        const body = this.#body;
        const first = this.#first;
        this.#reset();
        if (!sink.frame(first, body)) return undefined;
        continue;
      }
      if (this.#first < 0) {
        this.#first = chunk[pos++];
        continue;
      }
      const byte = chunk[pos++];
      this.#length += (byte & 0x7f) * this.#multiplier;
      this.#multiplier *= 128;
      this.#lengthBytes++;
      if (byte & 0x80) {
        if (this.#lengthBytes === 4) return { kind: 'malformed', reason: 'remaining length longer than four bytes' };
        continue;
      }
      const total = 1 + this.#lengthBytes + this.#length;
      if (total > this.limit) return { kind: 'too-large', declared: total, limit: this.limit };
      const first = this.#first;
      const length = this.#length;
      if (length === 0) {
        this.#reset();
        if (!sink.frame(first, EMPTY)) return undefined;
      } else if (end - pos >= length) {
        this.#reset();
        const body = chunk.subarray(pos, pos + length);
        pos += length;
        if (!sink.frame(first, body)) return undefined;
      } else {
        this.#body = Buffer.allocUnsafe(length);
        this.#filled = 0;
      }
    }
    return undefined;
  }

  #reset(): void {
    this.#first = -1;
    this.#length = 0;
    this.#multiplier = 1;
    this.#lengthBytes = 0;
    this.#body = undefined;
    this.#filled = 0;
  }
}

/** The Remaining Length varint of `n` ([MQTT-1.5.5]). */
export function varintBytes(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return out;
}
