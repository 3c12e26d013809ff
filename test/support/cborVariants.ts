/**
 * Other RFC 8949 encodings of an uplink envelope than the writer's, for the reader's tests: keys in
 * random order, heads wider than needed, indefinite-length arrays and maps, integers as float16/32/64
 * where exact, the self-described tag (55799), the body tagged 64, optional keys given undefined,
 * and keys the envelope does not have with junk values. Every variant means the same envelope.
 * Choices come from `rnd` (a seeded generator), so a failing variant replays from its seed.
 */
import type { UplinkEnvelope } from '../../schemas/messages.ts';

export type Rnd = () => number;

/** mulberry32: small, seeded, good enough to pick encodings. */
export function seeded(seed: number): Rnd {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every finite float16 by value (-0 apart: a Map keys 0 and -0 alike). */
const halves = new Map<number, number>();
for (let h = 0xffff; h >= 0; h--) {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 31) continue;
  const abs = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  halves.set(h & 0x8000 ? -abs : abs, h);
}

export class CborVariant {
  readonly out: number[] = [];
  private readonly rnd: Rnd;

  constructor(rnd: Rnd) {
    this.rnd = rnd;
  }

  private chance(p: number): boolean {
    return this.rnd() < p;
  }

  head(major: number, n: number): void {
    const m = major << 5;
    const least = n < 24 ? 0 : n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x1_0000_0000 ? 4 : 8;
    const widths = [0, 1, 2, 4, 8].filter((w) => w >= least);
    const w = this.chance(0.6) ? least : widths[Math.floor(this.rnd() * widths.length)];
    if (w === 0) this.out.push(m | n);
    else {
      this.out.push(m | (w === 1 ? 24 : w === 2 ? 25 : w === 4 ? 26 : 27));
      for (let i = w - 1; i >= 0; i--) this.out.push(Math.floor(n / 2 ** (8 * i)) % 256);
    }
  }

  private float(n: number): void {
    const half = Object.is(n, -0) ? 0x8000 : halves.get(n);
    if (half !== undefined && this.chance(0.5)) return void this.out.push(0xf9, half >> 8, half & 0xff);
    const view = new DataView(new ArrayBuffer(8));
    if (Math.fround(n) === n && this.chance(0.5)) {
      view.setFloat32(0, n);
      return void this.out.push(0xfa, ...new Uint8Array(view.buffer, 0, 4));
    }
    view.setFloat64(0, n);
    this.out.push(0xfb, ...new Uint8Array(view.buffer));
  }

  text(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.head(3, bytes.length);
    this.out.push(...bytes);
  }

  number(n: number): void {
    // -1 - n is exact only for safe integers.
    if (!Number.isInteger(n) || Object.is(n, -0) || n >= 2 ** 64 || n < -Number.MAX_SAFE_INTEGER || this.chance(0.15)) return this.float(n);
    if (n >= 0) this.head(0, n);
    else this.head(1, -1 - n);
  }

  /** A JSON value, an undefined, or bytes (tagged 64 or not). */
  value(v: unknown): void {
    if (this.chance(0.05)) this.out.push(0xd9, 0xd9, 0xf7);
    if (typeof v === 'string') return this.text(v);
    if (typeof v === 'number') return this.number(v);
    if (typeof v === 'boolean') return void this.out.push(v ? 0xf5 : 0xf4);
    if (v === null) return void this.out.push(0xf6);
    if (v === undefined) return void this.out.push(0xf7);
    if (v instanceof Uint8Array) {
      if (this.chance(0.3)) this.out.push(0xd8, 0x40);
      this.head(2, v.length);
      return void this.out.push(...v);
    }
    if (Array.isArray(v)) return this.array(v.map((x) => () => this.value(x)));
    this.map(Object.entries(v as object).map(([k, x]) => [k, () => this.value(x)]), false);
  }

  array(items: Array<() => void>): void {
    const indefinite = this.chance(0.2);
    if (indefinite) this.out.push(0x9f);
    else this.head(4, items.length);
    for (const item of items) item();
    if (indefinite) this.out.push(0xff);
  }

  /** A map of `entries`, shuffled when `free` (and then with keys no reader knows, of junk values). */
  map(entries: Array<[string, () => void]>, free: boolean): void {
    const all: Array<[string | number, () => void]> = [...entries];
    if (free) {
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(this.rnd() * (i + 1));
        [all[i], all[j]] = [all[j], all[i]];
      }
      const extra = this.chance(0.5) ? Math.floor(this.rnd() * 3) : 0;
      for (let i = 0; i < extra; i++) {
        const key = this.chance(0.3) ? Math.floor(this.rnd() * 1000) - 500 : `x-${i}`;
        all.splice(Math.floor(this.rnd() * (all.length + 1)), 0, [key, () => this.junk(0)]);
      }
    }
    const indefinite = this.chance(0.2);
    if (indefinite) this.out.push(0xbf);
    else this.head(5, all.length);
    for (const [k, write] of all) {
      if (typeof k === 'number') this.number(k);
      else this.text(k);
      write();
    }
    if (indefinite) this.out.push(0xff);
  }

  /** Any value a reader must step over: every major type, floats of every width, nesting. */
  junk(depth: number): void {
    const pick = Math.floor(this.rnd() * (depth > 4 ? 7 : 9));
    const values: unknown[] = [Math.floor(this.rnd() * 2 ** 40) - 2 ** 39, this.rnd() * 1e6, 'jünk', new Uint8Array([1, 2, 3]), undefined, null, Number.NaN];
    if (pick < 7) return this.value(values[pick]);
    const n = Math.floor(this.rnd() * 4);
    if (pick === 7) return this.array(Array.from({ length: n }, () => () => this.junk(depth + 1)));
    this.map(Array.from({ length: n }, (_, i) => [`j${i}`, () => this.junk(depth + 1)] as [string, () => void]), false);
  }
}

/** The envelope `e` encoded with choices from `rnd`. */
export function envelopeVariant(e: UplinkEnvelope, rnd: Rnd): Uint8Array {
  const w = new CborVariant(rnd);
  const optional = (key: string, v: unknown, write: () => void): Array<[string, () => void]> =>
    v !== undefined ? [[key, write]] : rnd() < 0.2 ? [[key, () => w.out.push(0xf7)]] : [];
  if (rnd() < 0.1) w.out.push(0xd9, 0xd9, 0xf7);
  const n = e.network;
  const a = e.admitted;
  w.map([
    ['id', () => w.value(e.id)],
    ['channel', () => w.value(e.channel)],
    ['contentType', () => w.value(e.contentType)],
    ['deviceId', () => w.value(e.deviceId)],
    ...optional('asset', e.asset, () => w.value(e.asset)),
    ...optional('network', n, () => w.map([
      ['networkId', () => w.value(n!.networkId)],
      ...optional('devEui', n?.devEui, () => w.value(n!.devEui)),
      ...optional('fPort', n?.fPort, () => w.value(n!.fPort)),
      ...optional('receivedAt', n?.receivedAt, () => w.value(n!.receivedAt)),
      ...optional('format', n?.format, () => w.value(n!.format)),
    ], true)),
    ['receivedAt', () => w.value(e.receivedAt)],
    ['body', () => w.value(e.body)],
    ...optional('admitted', a, () => w.map([
      ['states', () => w.array(a!.states.map(([asset, ts, value]) => () => w.array([() => w.value(asset), () => w.value(ts), () => w.value(value)])))],
      ['dropped', () => w.array(a!.dropped.map((entry) => () => w.value(entry)))],
    ], true)),
    ...(rnd() < 0.1 ? [['version', () => w.number(1)] as [string, () => void]] : []),
  ], true);
  return Uint8Array.from(w.out);
}

/**
 * Whether some map in `bytes` names a key twice as cbor-x names keys (text as the WHATWG decoder
 * reads it, a number or simple value as its text, `__proto__` as `__proto_`): the reader refuses
 * those, where cbor-x keeps the last value, whatever the values it replaced were. Anything not
 * well-formed ends the walk with what was found so far.
 */
export function hasRepeatedKey(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
  let p = 0;
  let found = false;
  const arg = (info: number): number => {
    if (info < 24) return info;
    const size = 1 << (info - 24);
    if (info > 27 || p + size > bytes.length) throw new Error('not well-formed');
    let n = 0;
    for (let i = 0; i < size; i++) n = n * 256 + bytes[p + i];
    p += size;
    return n;
  };
  const half = (h: number) => {
    const e = (h >> 10) & 0x1f;
    const m = h & 0x3ff;
    const abs = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15);
    return h & 0x8000 ? -abs : abs;
  };
  /** The item's name as a key, or undefined for an item that names no key. */
  const item = (): string | undefined => {
    if (p >= bytes.length) throw new Error('truncated');
    const b = bytes[p++];
    const major = b >> 5;
    const info = b & 0x1f;
    if (major === 7) {
      if (info >= 20 && info <= 23) return ['false', 'true', 'null', 'undefined'][info - 20];
      if (info === 25) return String(half(arg(25)));
      if (info === 26 || info === 27) {
        const v = info === 26 ? view.getFloat32(p) : view.getFloat64(p);
        p += info === 26 ? 4 : 8;
        return String(v);
      }
      throw new Error('simple value');
    }
    const indefinite = info === 31;
    const n = indefinite ? -1 : arg(info);
    if (major <= 1) return String(major === 0 ? n : -1 - n);
    if (major === 6) return item();
    if (major === 2 || major === 3) {
      if (indefinite || p + n > bytes.length) throw new Error('not read');
      p += n;
      return major === 3 ? utf8.decode(bytes.subarray(p - n, p)) : undefined;
    }
    const names = new Set<string>();
    for (let i = 0; indefinite ? bytes[p] !== 0xff : i < n; i++) {
      if (major === 5) {
        const name = item();
        const named = name === '__proto__' ? '__proto_' : name;
        if (named !== undefined && names.has(named)) found = true;
        if (named !== undefined) names.add(named);
      }
      item();
    }
    if (indefinite) p++;
    return undefined;
  };
  try {
    item();
  } catch {
    // found so far
  }
  return found;
}
