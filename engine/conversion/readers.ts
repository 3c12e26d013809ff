/**
 * Readers: one closure per selector, built once per script. A block checks the payload length once
 * (FieldSpec.minLength), so the fixed-position readers index without further bounds checks.
 */
import { FleetError } from '../kernel/errors.ts';
import { affineForm, compileCalculation } from './calculation.ts';
import type { FieldSpec } from './types.ts';

export type Reader = (b: Uint8Array) => unknown;
type NumReader = (b: Uint8Array) => number;

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const scratch = new DataView(new ArrayBuffer(8));

export function decodeFailed(reason: string): FleetError {
  return new FleetError('DECODE_FAILED', reason);
}

/** Unsigned big- or little-endian integer of up to 6 bytes (exact in a double). */
export function readUint(b: Uint8Array, o: number, n: number, little: boolean): number {
  let v = 0;
  if (little) for (let i = n - 1; i >= 0; i--) v = v * 256 + b[o + i];
  else for (let i = 0; i < n; i++) v = v * 256 + b[o + i];
  return v;
}

/** Integers wider than 6 bytes: exact up to 2^53, the nearest double beyond (README.md). */
export function readWide(b: Uint8Array, o: number, n: number, little: boolean, signed: boolean): number {
  let v = 0n;
  if (little) for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[o + i]);
  else for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(b[o + i]);
  return Number(signed ? BigInt.asIntN(n * 8, v) : v);
}

export function float16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function fixedInt(o: number, n: number, little: boolean, signed: boolean): NumReader {
  if (n === 1) return signed ? (b) => (b[o] << 24) >> 24 : (b) => b[o];
  if (n === 2) {
    if (little) return signed ? (b) => ((b[o + 1] << 24) >> 16) | b[o] : (b) => (b[o + 1] << 8) | b[o];
    return signed ? (b) => ((b[o] << 24) >> 16) | b[o + 1] : (b) => (b[o] << 8) | b[o + 1];
  }
  if (n === 3) {
    if (little) return signed ? (b) => ((b[o + 2] << 24) >> 8) | (b[o + 1] << 8) | b[o] : (b) => (b[o + 2] << 16) | (b[o + 1] << 8) | b[o];
    return signed ? (b) => ((b[o] << 24) >> 8) | (b[o + 1] << 8) | b[o + 2] : (b) => (b[o] << 16) | (b[o + 1] << 8) | b[o + 2];
  }
  if (n === 4) {
    if (little) {
      return signed
        ? (b) => (b[o + 3] << 24) | (b[o + 2] << 16) | (b[o + 1] << 8) | b[o]
        : (b) => b[o + 3] * 0x1000000 + ((b[o + 2] << 16) | (b[o + 1] << 8) | b[o]);
    }
    return signed
      ? (b) => (b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]
      : (b) => b[o] * 0x1000000 + ((b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]);
  }
  if (n <= 6) {
    const half = 2 ** (n * 8 - 1);
    const full = 2 ** (n * 8);
    return signed
      ? (b) => { const v = readUint(b, o, n, little); return v >= half ? v - full : v; }
      : (b) => readUint(b, o, n, little);
  }
  return (b) => readWide(b, o, n, little, signed);
}

export function floatAt(b: Uint8Array, o: number, n: number, little: boolean): number {
  if (n === 2) return float16(little ? b[o] | (b[o + 1] << 8) : (b[o] << 8) | b[o + 1]);
  for (let i = 0; i < n; i++) scratch.setUint8(i, b[o + i]);
  return n === 4 ? scratch.getFloat32(0, little) : scratch.getFloat64(0, little);
}

/** Where the field starts and how long it is, for the payload at hand. */
function place(spec: FieldSpec): { start: (b: Uint8Array) => number; len: (b: Uint8Array) => number } {
  const { offset, endOffset, length } = spec;
  if (spec.anchor === 'start') return { start: () => offset, len: () => length };
  if (spec.anchor === 'end') return { start: (b) => b.length + offset, len: () => length };
  return { start: () => offset, len: (b) => b.length + endOffset - offset };
}

function numberReader(spec: FieldSpec, path: string): NumReader {
  const { kind, little, length, bit, bitlength } = spec;
  const signed = kind === 'int';
  if (kind === 'float') {
    if (spec.anchor === 'start') {
      const o = spec.offset;
      return (b) => floatAt(b, o, length, little);
    }
    const { start, len } = place(spec);
    return (b) => {
      const n = len(b);
      if (n !== 2 && n !== 4 && n !== 8) throw decodeFailed(`${path}: a float needs 2, 4 or 8 bytes, the range has ${n}`);
      return floatAt(b, start(b), n, little);
    };
  }
  if (bit !== undefined && spec.anchor === 'start' && length === 1) {
    const o = spec.offset;
    const mask = 2 ** bitlength - 1;
    const width = 2 ** bitlength;
    return signed ? (b) => { const v = (b[o] >> bit) & mask; return v >= width / 2 ? v - width : v; } : (b) => (b[o] >> bit) & mask;
  }
  if (bit !== undefined) {
    // Bit fields live within 6 bytes (FieldSpec), so the raw integer is exact.
    const { start } = place(spec);
    const raw: NumReader = spec.anchor === 'start' ? fixedInt(spec.offset, length, little, false) : (b) => readUint(b, start(b), length, little);
    const width = 2 ** bitlength;
    const shift = 2 ** bit;
    const half = width / 2;
    if (bit + bitlength <= 31) {
      const mask = width - 1;
      return signed ? (b) => { const v = (raw(b) >>> bit) & mask; return v >= half ? v - width : v; } : (b) => (raw(b) >>> bit) & mask;
    }
    return signed
      ? (b) => { const v = Math.floor(raw(b) / shift) % width; return v >= half ? v - width : v; }
      : (b) => Math.floor(raw(b) / shift) % width;
  }
  if (spec.anchor === 'start') return fixedInt(spec.offset, length, little, signed);
  const { start, len } = place(spec);
  return (b) => {
    const n = len(b);
    if (n < 1) throw decodeFailed(`${path}: the range selects no bytes`);
    if (n > 6) return readWide(b, start(b), n, little, signed);
    const v = readUint(b, start(b), n, little);
    return signed && v >= 2 ** (n * 8 - 1) ? v - 2 ** (n * 8) : v;
  };
}

/**
 * The reader of a selector: the decoded value, after `calculation`. Numbers that are not finite
 * (a NaN float, a division by zero) read as null, since JSON has no NaN.
 */
export function makeReader(spec: FieldSpec, path: string): Reader {
  const { kind, little } = spec;
  if (kind === 'uint' || kind === 'int' || kind === 'float') {
    const read = numberReader(spec, path);
    // The widest raw value: a range, or a field beyond 1024 bits, can read as Infinity.
    const widest = kind === 'float' || spec.anchor === 'range' ? Infinity : 2 ** (spec.bit === undefined ? spec.length * 8 : spec.bitlength);
    if (!spec.calc) return widest === Infinity ? (b) => { const v = read(b); return v - v === 0 ? v : null; } : read;
    // Scale/offset calculations are fused into the read; others call the compiled expression.
    const affine = affineForm(spec.calc);
    if (affine && affine.op !== 'none') {
      const c = affine.c;
      const a = affine.add;
      // An integer scaled by a constant cannot leave the finite range unless the constant is extreme.
      const bound = (affine.op === 'div' ? widest / Math.abs(c) : widest * Math.abs(c)) + Math.abs(a ?? 0);
      if (bound < 1e300) {
        if (affine.op === 'div') return a === undefined ? (b) => read(b) / c : (b) => read(b) / c + a;
        return a === undefined ? (b) => read(b) * c : (b) => read(b) * c + a;
      }
      if (affine.op === 'div') {
        return a === undefined
          ? (b) => { const v = read(b) / c; return v - v === 0 ? v : null; }
          : (b) => { const v = read(b) / c + a; return v - v === 0 ? v : null; };
      }
      return a === undefined
        ? (b) => { const v = read(b) * c; return v - v === 0 ? v : null; }
        : (b) => { const v = read(b) * c + a; return v - v === 0 ? v : null; };
    }
    const calc = compileCalculation(spec.calc);
    return (b) => { const v = calc(read(b)); return v - v === 0 ? v : null; };
  }
  const { start, len } = place(spec);
  if (kind === 'bool') {
    if (spec.bit !== undefined) {
      if (spec.anchor === 'start' && spec.length === 1) {
        const o = spec.offset;
        const mask = (2 ** spec.bitlength - 1) << spec.bit;
        return (b) => (b[o] & mask) !== 0;
      }
      const bits = numberReader({ ...spec, kind: 'uint' }, path);
      return (b) => bits(b) !== 0;
    }
    if (spec.anchor === 'start' && spec.length === 1) { const o = spec.offset; return (b) => b[o] !== 0; }
    return (b) => { const s = start(b); return anyNonZero(b, s, s + len(b)); };
  }
  if (kind === 'hex') return (b) => hexAt(b, start(b), len(b), little);
  return (b) => utf8At(b, start(b), len(b), path);
}

/** A boolean over whole bytes: false when all of them are 0. */
export function anyNonZero(b: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (b[i] !== 0) return true;
  return false;
}

/** Lowercase hex of `n` bytes from `s`; little-endian reverses them (MAC addresses). */
export function hexAt(b: Uint8Array, s: number, n: number, little: boolean): string {
  let out = '';
  if (little) for (let i = n - 1; i >= 0; i--) out += HEX[b[s + i]];
  else for (let i = 0; i < n; i++) out += HEX[b[s + i]];
  return out;
}

/** UTF-8 text of `n` bytes from `s`, without the NUL bytes that pad fixed-width fields. */
export function utf8At(b: Uint8Array, s: number, n: number, path: string): string {
  let e = s + n;
  while (e > s && b[e - 1] === 0) e--;
  try {
    return utf8.decode(b.subarray(s, e));
  } catch {
    throw decodeFailed(`${path}: bytes ${s}..${e - 1} are not valid UTF-8`);
  }
}
