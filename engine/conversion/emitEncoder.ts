/**
 * The source of a device type's encoder: the checked `actuate` program as straight-line
 * JavaScript that gives what the closure compiler (test/support/reference) gives, bytes and errors alike. Each
 * field is one call of a writers.ts primitive with its position as literals; an integer field's
 * inverse calculation is inlined, operation for operation as calculation.ts applies it.
 */
import type { ActuationIR } from './analyzeScript.ts';
import { inverseSteps, type InverseStep } from './calculation.ts';
import { internalize } from './codec.ts';
import type { FieldSpec } from './types.ts';
import { booleanToken as bool, numberToken as num, type SourceBuilder } from './SourceBuilder.ts';

function step(y: string, s: InverseStep): string {
  if (s.op === 'neg') return `(-${y})`;
  const c = num(s.c);
  switch (s.op) {
    case 'sub': return `(${y} - ${c})`;
    case 'add': return `(${y} + ${c})`;
    case 'rsub': return `(${c} - ${y})`;
    case 'div': return `(${y} / ${c})`;
    case 'mul': return `(${y} * ${c})`;
    case 'rdiv': return `(${c} / ${y})`;
  }
}

/** `x` after the inverse of the field's calculation (checked invertible when the script was saved). */
function inverse(spec: FieldSpec): string {
  if (!spec.calc) return 'x';
  const steps = inverseSteps(spec.calc);
  if (!steps) throw new Error('code generator: an actuate calculation without an inverse');
  return steps.reduce(step, 'x');
}

/** Writes the command value `v` into `buf` (writers.ts makeWriter, inlined per field). */
function write(spec: FieldSpec, path: string, sb: SourceBuilder): string {
  const { kind, little, length: n, offset: o, bit, bitlength } = spec;
  const p = sb.constant(path);
  const at = `buf, ${num(o)}, ${num(n)}, ${bool(little)}`;
  if (kind === 'uint' || kind === 'int') {
    const bits = bit === undefined ? n * 8 : bitlength;
    const min = kind === 'int' ? -(2 ** (bits - 1)) : 0;
    const max = kind === 'int' ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
    const raw = `x = toNumber(v, ${p}); x = rawInteger(${inverse(spec)}, v, ${num(min)}, ${num(max)}, ${p});`;
    return bit === undefined
      ? `${raw} writeInt(${at}, x);`
      : `${raw} writeBits(${at}, ${num(bit)}, ${num(bitlength)}, x < 0 ? x + ${num(2 ** bitlength)} : x);`;
  }
  if (kind === 'float') return `x = v === null ? NaN : toNumber(v, ${p}); writeFloat(${at}, ${inverse(spec)}, v, ${p});`;
  if (kind === 'bool') return `writeBool(${at}, ${num(bit ?? -1)}, ${num(bitlength)}, v, ${p});`;
  if (kind === 'hex') return `writeHex(${at}, v, ${p});`;
  return `writeString(buf, ${num(o)}, ${num(n)}, v, ${p});`;
}

/** Reads the command's value of an asset (codec.ts getPath) into `v`. */
function lookup(a: ActuationIR, sb: SourceBuilder): string {
  if (a.asset === undefined) return `v = ${sb.value(a.constant)};`;
  const get = a.asset.length === 1
    ? `v = Object.hasOwn(c, ${sb.constant(internalize(a.asset[0]))}) ? c[${sb.constant(internalize(a.asset[0]))}] : undefined;`
    : `v = getPath(c, ${sb.constant(a.asset)});`;
  const fallback = a.fallback === undefined ? '' : ` if (v === undefined) v = ${sb.value(a.fallback)};`;
  return `${get}${fallback} if (v === undefined) throw missing(${sb.constant(a.asset.join('.'))}, ${sb.constant(a.path)});`;
}

/**
 * `function encode(c)`: a command object to a zero-filled downlink of the program's length;
 * anything thrown leaves as VALIDATION_FAILED, as guardEncode does for the reference.
 */
export function emitEncoder(actuate: readonly ActuationIR[], length: number, sb: SourceBuilder): string {
  const fields = actuate.map((a) => `${lookup(a, sb)} ${write(a.spec, a.path, sb)}`);
  return `function encode(c) {
  if (!isRecord(c)) throw notCommand(type);
  try { const buf = new Uint8Array(${num(length)}); let v, x; ${fields.join(' ')} return buf; } catch (error) { throw encodeError(type, error); }
}`;
}
