/**
 * The closure readers of the reference compiler (compileScript.ts): one closure per selector,
 * built once per script; a block checks the payload length once (FieldSpec.minLength), so the
 * fixed-position readers index without further bounds checks. The generated code of
 * engine/conversion/emitReader.ts must read exactly what these read.
 */
import { fold, affineForm, type CalcNode } from '../../../engine/conversion/calculation.ts';
import { decodeFailed, floatAt, hexAt, readUint, readWide, utf8At, anyNonZero } from '../../../engine/conversion/readers.ts';
import type { FieldSpec } from '../../../engine/conversion/types.ts';

export type Reader = (b: Uint8Array) => unknown;
type NumReader = (b: Uint8Array) => number;

/** Compiles a calculation into `(val) => number`; common shapes get dedicated closures. */
export function compileCalculation(tree: CalcNode): (val: number) => number {
  const node = fold(tree);
  if (node.k === 'val') return (v) => v;
  if (node.k === 'num') { const c = node.v; return () => c; }
  if (node.k === 'bin' && node.a.k === 'val' && node.b.k === 'num') {
    const c = node.b.v;
    switch (node.op) {
      case '+': return (v) => v + c;
      case '-': return (v) => v - c;
      case '*': return (v) => v * c;
      case '/': return (v) => v / c;
      default: return (v) => v % c;
    }
  }
  if (node.k === 'bin' && node.b.k === 'num' && node.a.k === 'bin' && node.a.a.k === 'val' && node.a.b.k === 'num'
      && (node.a.op === '*' || node.a.op === '/') && (node.op === '+' || node.op === '-')) {
    // scale then offset: `val * 0.5 - 40`
    const s = node.a.op === '*' ? node.a.b.v : 1 / node.a.b.v;
    const exact = node.a.op === '*';
    const d = node.a.b.v;
    const o = node.op === '+' ? node.b.v : -node.b.v;
    return exact ? (v) => v * s + o : (v) => v / d + o;
  }
  return build(node);
}

function build(node: CalcNode): (val: number) => number {
  switch (node.k) {
    case 'num': { const c = node.v; return () => c; }
    case 'val': return (v) => v;
    case 'neg': { const a = build(node.a); return (v) => -a(v); }
    case 'bin': {
      const a = build(node.a);
      const b = build(node.b);
      switch (node.op) {
        case '+': return (v) => a(v) + b(v);
        case '-': return (v) => a(v) - b(v);
        case '*': return (v) => a(v) * b(v);
        case '/': return (v) => a(v) / b(v);
        default: return (v) => a(v) % b(v);
      }
    }
  }
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

