/**
 * Reading the payload's bytes: the primitives the generated decoders call (generatedRuntime.ts) and
 * the DECODE_FAILED error they raise.
 */
import { FleetError } from '../kernel/errors.ts';

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

export function floatAt(b: Uint8Array, o: number, n: number, little: boolean): number {
  if (n === 2) return float16(little ? b[o] | (b[o + 1] << 8) : (b[o] << 8) | b[o + 1]);
  for (let i = 0; i < n; i++) scratch.setUint8(i, b[o + i]);
  return n === 4 ? scratch.getFloat32(0, little) : scratch.getFloat64(0, little);
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
