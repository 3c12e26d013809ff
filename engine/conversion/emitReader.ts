/**
 * The source of a selector's reader, for code generated per device type: a JavaScript expression
 * over the payload `b` that gives what the reference's `makeReader` (test/support/reference/
 * closureReaders.ts) gives for the same FieldSpec (test/engine/conversion/conversion-generated.test.ts holds them to
 * each other). Simple fields are inline
 * expressions (`((b[3] << 8) | b[4]) / 10`); the rest call the shared primitives of readers.ts,
 * which take every parameter as an argument and so stay monomorphic in a fleet of device types.
 */
import { affineForm, fold, type CalcNode } from './calculation.ts';
import type { FieldSpec } from './types.ts';
import { booleanToken as bool, numberToken as num, type SourceBuilder } from './SourceBuilder.ts';

function startOf(spec: FieldSpec): string {
  return spec.anchor === 'end' ? `(b.length + ${num(spec.offset)})` : num(spec.offset);
}

function lengthOf(spec: FieldSpec): string {
  return spec.anchor === 'range' ? `(b.length + ${num(spec.endOffset - spec.offset)})` : num(spec.length);
}

/** A fixed-position integer, as readers.ts `fixedInt` reads it. */
function fixedInt(o: number, n: number, little: boolean, signed: boolean, sb: SourceBuilder): string {
  const at = (i: number) => `b[${num(o + (little ? n - 1 - i : i))}]`; // i-th byte, most significant first
  if (n === 1) return signed ? `((${at(0)} << 24) >> 24)` : at(0);
  if (n === 2) return signed ? `(((${at(0)} << 24) >> 16) | ${at(1)})` : `((${at(0)} << 8) | ${at(1)})`;
  if (n === 3) return signed ? `(((${at(0)} << 24) >> 8) | (${at(1)} << 8) | ${at(2)})` : `((${at(0)} << 16) | (${at(1)} << 8) | ${at(2)})`;
  if (n === 4) {
    return signed
      ? `((${at(0)} << 24) | (${at(1)} << 16) | (${at(2)} << 8) | ${at(3)})`
      : `(${at(0)} * 16777216 + ((${at(1)} << 16) | (${at(2)} << 8) | ${at(3)}))`;
  }
  if (n <= 6) {
    const u = `readUint(b, ${num(o)}, ${num(n)}, ${bool(little)})`;
    return signed ? sb.call(`const v = ${u}; return v >= ${num(2 ** (n * 8 - 1))} ? v - ${num(2 ** (n * 8))} : v;`) : u;
  }
  return `readWide(b, ${num(o)}, ${num(n)}, ${bool(little)}, ${bool(signed)})`;
}

/** The raw number of an integer or float field, as readers.ts `numberReader` reads it. */
function rawNumber(spec: FieldSpec, path: string, sb: SourceBuilder): string {
  const { kind, little, length, bit, bitlength } = spec;
  const signed = kind === 'int';
  const twos = (field: string, width: number) => (signed ? sb.call(`const v = ${field}; return v >= ${num(width / 2)} ? v - ${num(width)} : v;`) : field);
  if (kind === 'float') {
    if (spec.anchor !== 'range') return `floatAt(b, ${startOf(spec)}, ${num(length)}, ${bool(little)})`;
    return sb.call(`const n = ${lengthOf(spec)}; if (n !== 2 && n !== 4 && n !== 8) throw floatRange(${sb.constant(path)}, n); return floatAt(b, ${num(spec.offset)}, n, ${bool(little)});`);
  }
  if (bit !== undefined) {
    const width = 2 ** bitlength;
    if (spec.anchor === 'start' && length === 1) return twos(`((b[${num(spec.offset)}] >> ${num(bit)}) & ${num(width - 1)})`, width);
    // Bit fields live within 6 bytes (FieldSpec), so the raw integer is exact.
    const raw = spec.anchor === 'start' ? fixedInt(spec.offset, length, little, false, sb) : `readUint(b, ${startOf(spec)}, ${num(length)}, ${bool(little)})`;
    return twos(bit + bitlength <= 31 ? `((${raw} >>> ${num(bit)}) & ${num(width - 1)})` : `(Math.floor(${raw} / ${num(2 ** bit)}) % ${num(width)})`, width);
  }
  if (spec.anchor === 'start') return fixedInt(spec.offset, length, little, signed, sb);
  const start = startOf(spec);
  return sb.call(`const n = ${lengthOf(spec)}; if (n < 1) throw rangeEmpty(${sb.constant(path)});`
    + ` if (n > 6) return readWide(b, ${start}, n, ${bool(little)}, ${bool(signed)});`
    + ` const v = readUint(b, ${start}, n, ${bool(little)}); return ${signed ? 'v >= 2 ** (n * 8 - 1) ? v - 2 ** (n * 8) : v' : 'v'};`);
}

/** A folded calculation over the variable `v`, operation for operation as calculation.ts evaluates it. */
function calculation(node: CalcNode): string {
  switch (node.k) {
    case 'num': return num(node.v);
    case 'val': return 'v';
    case 'neg': return `(-${calculation(node.a)})`;
    case 'bin': return `(${calculation(node.a)} ${node.op} ${calculation(node.b)})`;
  }
}

/** Null for a number that is not finite (JSON has no NaN). */
function finite(expression: string, sb: SourceBuilder): string {
  return sb.call(`const v = ${expression}; return v - v === 0 ? v : null;`);
}

/** The expression of a selector's value, after `calculation`, as readers.ts `makeReader` gives it. */
export function emitReader(spec: FieldSpec, path: string, sb: SourceBuilder): string {
  const { kind, little } = spec;
  if (kind === 'uint' || kind === 'int' || kind === 'float') {
    const read = rawNumber(spec, path, sb);
    const widest = kind === 'float' || spec.anchor === 'range' ? Infinity : 2 ** (spec.bit === undefined ? spec.length * 8 : spec.bitlength);
    if (!spec.calc) return widest === Infinity ? finite(read, sb) : read;
    const affine = affineForm(spec.calc);
    if (affine && affine.op !== 'none') {
      const { c, add } = affine;
      const bound = (affine.op === 'div' ? widest / Math.abs(c) : widest * Math.abs(c)) + Math.abs(add ?? 0);
      const scaled = `${read} ${affine.op === 'div' ? '/' : '*'} ${num(c)}${add === undefined ? '' : ` + ${num(add)}`}`;
      return bound < 1e300 ? `(${scaled})` : finite(scaled, sb);
    }
    return sb.call(`const v = ${read}; const r = ${calculation(fold(spec.calc))}; return r - r === 0 ? r : null;`);
  }
  if (kind === 'bool') {
    if (spec.bit !== undefined) {
      if (spec.anchor === 'start' && spec.length === 1) return `((b[${num(spec.offset)}] & ${num((2 ** spec.bitlength - 1) << spec.bit)}) !== 0)`;
      return `(${rawNumber({ ...spec, kind: 'uint' }, path, sb)} !== 0)`;
    }
    if (spec.anchor === 'start' && spec.length === 1) return `(b[${num(spec.offset)}] !== 0)`;
    return sb.call(`const s = ${startOf(spec)}; return anyNonZero(b, s, s + ${lengthOf(spec)});`);
  }
  if (kind === 'hex') return `hexAt(b, ${startOf(spec)}, ${lengthOf(spec)}, ${bool(little)})`;
  return `utf8At(b, ${startOf(spec)}, ${lengthOf(spec)}, ${sb.constant(path)})`;
}
