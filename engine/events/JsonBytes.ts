/**
 * JSON text written as UTF-8 straight into a buffer, for the records the engine writes per uplink
 * (eventRecords.ts): building them as strings first made a string per piece, and those strings,
 * collected while thousands of uplinks are in flight, cost the engine more than writing the text.
 * One writer is reused: `take()` hands out what was written, a slice of its buffer, and writes
 * on after it; a buffer full, it writes into a new one (the slices handed out keep the old alive).
 */

export class JsonBytes {
  readonly #bufferBytes: number;
  #buffer: Buffer;
  /** Where what take() hands out next begins. */
  #start = 0;
  #length = 0;

  constructor(bufferBytes = 64 * 1024) {
    this.#bufferBytes = bufferBytes;
    this.#buffer = Buffer.allocUnsafe(bufferBytes);
  }

  /** Text that is JSON already, ASCII (the syntax between values: a few characters, copied one by one). */
  raw(text: string): this {
    const n = text.length;
    this.#room(n);
    const b = this.#buffer;
    let at = this.#length;
    for (let i = 0; i < n; i++) b[at++] = text.charCodeAt(i);
    this.#length = at;
    return this;
  }

  /** `s` as a JSON string: as it is, between quotes, when nothing in it needs escaping (printable ASCII but `"` and `\\`). */
  string(s: string): this {
    const n = s.length;
    this.#room(n + 2);
    const b = this.#buffer;
    let at = this.#length;
    b[at++] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(s));
      b[at++] = c;
    }
    b[at++] = 0x22;
    this.#length = at;
    return this;
  }

  /** A JSON value (JSON.stringify's text of it; a number that is not finite is null, as there). */
  value(value: unknown): this {
    if (typeof value === 'number' && Number.isSafeInteger(value)) return this.integer(value);
    if (typeof value === 'number' && Number.isFinite(value)) return this.raw(String(value));
    return this.utf8(JSON.stringify(value) ?? 'null');
  }

  /** An integer, its digits written without a string (int32 arithmetic: a double's % is slow); one past 2^53 as JSON writes it. */
  integer(n: number): this {
    if (!Number.isSafeInteger(n)) return this.raw(JSON.stringify(n));
    this.#room(17);
    const b = this.#buffer;
    let at = this.#length;
    if (n < 0) {
      b[at++] = 0x2d;
      n = -n;
    }
    if (n >= 1e9) {
      const high = Math.floor(n / 1e9);
      at = writeSmall(b, at, high);
      this.#length = writeNine(b, at, n - high * 1e9);
    } else {
      this.#length = writeSmall(b, at, n);
    }
    return this;
  }

  /** Text of any characters, already JSON. */
  utf8(text: string): this {
    this.#room(text.length * 3);
    this.#length += this.#buffer.write(text, this.#length, 'utf8');
    return this;
  }

  /** What was written since the last take(), never written again. */
  take(): Buffer {
    const out = this.#buffer.subarray(this.#start, this.#length);
    this.#start = this.#length;
    return out;
  }

  /** Room for `bytes` more: what is being written moves to a new buffer when this one is short. */
  #room(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return;
    const pending = this.#length - this.#start;
    const next = Buffer.allocUnsafe(Math.max(this.#bufferBytes, 2 * (pending + bytes)));
    this.#buffer.copy(next, 0, this.#start, this.#length);
    this.#buffer = next;
    this.#start = 0;
    this.#length = pending;
  }
}

/** `n` (< 1e9) at `at`; the offset after it. */
function writeSmall(b: Buffer, at: number, n: number): number {
  let value = n | 0;
  let digits = 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) digits++;
  const end = at + digits;
  let p = end;
  do {
    const q = (value / 10) | 0;
    b[--p] = 0x30 + value - q * 10;
    value = q;
  } while (value > 0);
  return end;
}

/** `n` (< 1e9) as nine digits, zeros first. */
function writeNine(b: Buffer, at: number, n: number): number {
  let value = n | 0;
  for (let p = at + 8; p >= at; p--) {
    const q = (value / 10) | 0;
    b[p] = 0x30 + value - q * 10;
    value = q;
  }
  return at + 9;
}

