/**
 * Writers for `actuate` fields: put one command value into its bytes (or bits) of a zero-filled
 * downlink buffer. A field's `calculation` means what it means when sensing (raw → value), so the
 * writer applies its inverse; integers are rounded to the nearest raw step and range-checked.
 */
import { FleetError } from '../kernel/errors.ts';
import { invertCalculation } from './calculation.ts';
import type { FieldSpec } from './types.ts';
import { readUint } from './readers.ts';

export type Writer = (buf: Uint8Array, value: unknown) => void;

const utf8 = new TextEncoder();
const scratch = new DataView(new ArrayBuffer(8));
const FLOAT32_MAX = 3.4028234663852886e38;

function invalid(path: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${path}: ${message}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value;
}

/** Half precision, round to nearest even; values beyond 65504 are rejected by the caller. */
export function toFloat16(value: number): number {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const a = Math.abs(value);
  if (a === Infinity) return sign | 0x7c00;
  if (a < 2 ** -24 / 2) return sign;
  let exp = Math.floor(Math.log2(a));
  if (2 ** exp > a) exp--; else if (2 ** (exp + 1) <= a) exp++;
  if (exp < -14) return sign | roundEven(a / 2 ** -24);
  let frac = roundEven((a / 2 ** exp - 1) * 1024);
  if (frac === 1024) { frac = 0; exp++; }
  if (exp > 15) return sign | 0x7c00;
  return sign | ((exp + 15) << 10) | frac;
}

function roundEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  return d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f;
}

export function writeInt(buf: Uint8Array, o: number, n: number, little: boolean, v: number): void {
  if (n > 6) {
    let w = BigInt.asUintN(n * 8, BigInt(v));
    for (let i = 0; i < n; i++) { buf[little ? o + i : o + n - 1 - i] = Number(w & 0xffn); w >>= 8n; }
    return;
  }
  let u = v < 0 ? v + 2 ** (n * 8) : v;
  for (let i = 0; i < n; i++) {
    const byte = u % 256;
    buf[little ? o + i : o + n - 1 - i] = byte;
    u = (u - byte) / 256;
  }
}

export function makeWriter(spec: FieldSpec, path: string): Writer {
  const { kind, little, length: n, offset: o, bit, bitlength } = spec;
  const inverse = spec.calc ? invertCalculation(spec.calc) : undefined;

  if (kind === 'uint' || kind === 'int') {
    const bits = bit === undefined ? n * 8 : bitlength;
    const min = kind === 'int' ? -(2 ** (bits - 1)) : 0;
    const max = kind === 'int' ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
    return (buf, value) => {
      const x = toNumber(value, path);
      const r = rawInteger(inverse ? inverse(x) : x, value, min, max, path);
      if (bit === undefined) writeInt(buf, o, n, little, r);
      else writeBits(buf, o, n, little, bit, bitlength, r < 0 ? r + 2 ** bitlength : r);
    };
  }
  if (kind === 'float') {
    return (buf, value) => {
      const x = value === null ? NaN : toNumber(value, path);
      writeFloat(buf, o, n, little, inverse ? inverse(x) : x, value, path);
    };
  }
  if (kind === 'bool') return (buf, value) => writeBool(buf, o, n, little, bit ?? -1, bitlength, value, path);
  if (kind === 'hex') return (buf, value) => writeHex(buf, o, n, little, value, path);
  return (buf, value) => writeString(buf, o, n, value, path);
}

/*
 * The primitives below take everything as arguments, so the closures above and the code
 * generated per device type (emitEncoder.ts) share them and encode alike.
 */

/** A number (or boolean) for an integer or float field. */
export function toNumber(value: unknown, path: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  throw invalid(path, `expected a number, got ${describe(value)}`);
}

/** The raw integer for `x` (after the inverse calculation): rounded, range-checked. */
export function rawInteger(x: number, value: unknown, min: number, max: number, path: string): number {
  if (!Number.isFinite(x)) throw invalid(path, `${describe(value)} is not a finite number`);
  const r = x < 0 ? -Math.round(-x) : Math.round(x);
  if (r < min || r > max || !Number.isSafeInteger(r)) throw invalid(path, `${describe(value)} is out of range (raw ${min}..${max})`);
  return r;
}

/** Sets the `bitlength` bits at `bit` of the `n`-byte integer at `o` to `field`, keeping the others. */
export function writeBits(buf: Uint8Array, o: number, n: number, little: boolean, bit: number, bitlength: number, field: number): void {
  const shift = 2 ** bit;
  const old = readUint(buf, o, n, little);
  const cleared = old - (Math.floor(old / shift) % 2 ** bitlength) * shift;
  writeInt(buf, o, n, little, cleared + field * shift);
}

export function writeFloat(buf: Uint8Array, o: number, n: number, little: boolean, x: number, value: unknown, path: string): void {
  if (Number.isFinite(x) && Math.abs(x) > (n === 2 ? 65504 : n === 4 ? FLOAT32_MAX : Infinity)) throw invalid(path, `${describe(value)} does not fit a ${n * 8}-bit float`);
  if (n === 2) { writeInt(buf, o, 2, little, toFloat16(x)); return; }
  if (n === 4) scratch.setFloat32(0, x, little); else scratch.setFloat64(0, x, little);
  for (let i = 0; i < n; i++) buf[o + i] = scratch.getUint8(i);
}

/** `bit` -1: the whole bytes. */
export function writeBool(buf: Uint8Array, o: number, n: number, little: boolean, bit: number, bitlength: number, value: unknown, path: string): void {
  if (typeof value !== 'boolean' && value !== 0 && value !== 1) throw invalid(path, `expected a boolean, got ${describe(value)}`);
  const on = value === true || value === 1;
  // ABCL encodes true as all ones: a 1-byte boolean `true` is FF.
  if (bit < 0) buf.fill(on ? 0xff : 0, o, o + n);
  else writeBits(buf, o, n, little, bit, bitlength, on ? 2 ** bitlength - 1 : 0);
}

export function writeHex(buf: Uint8Array, o: number, n: number, little: boolean, value: unknown, path: string): void {
  if (typeof value !== 'string' || value.length !== n * 2 || !/^[0-9a-fA-F]*$/.test(value)) {
    throw invalid(path, `expected ${n * 2} hex digits, got ${describe(value)}`);
  }
  for (let i = 0; i < n; i++) buf[little ? o + n - 1 - i : o + i] = parseInt(value.slice(i * 2, i * 2 + 2), 16);
}

export function writeString(buf: Uint8Array, o: number, n: number, value: unknown, path: string): void {
  if (typeof value !== 'string') throw invalid(path, `expected a string, got ${describe(value)}`);
  const bytes = utf8.encode(value);
  if (bytes.length > n) throw invalid(path, `${describe(value)} takes ${bytes.length} bytes, the field has ${n}`);
  buf.set(bytes, o);
}
