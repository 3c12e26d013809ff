/**
 * A payload selector of the conversion language, checked and resolved into a FieldSpec: where its
 * bytes are, how to read them, and the shortest payload it can be read from. checkScript reports
 * the issues; generateCodec emits readers and writers from the spec (engine/conversion/README.md).
 */
import { calculationProblem, CalculationError, invertCalculation, parseCalculation, type CalcNode } from './calculation.ts';
import type { FieldKind, FieldSpec, ScriptIssue } from './types.ts';
import { isPlainObject } from '../kernel/isPlainObject.ts';

export { isPlainObject };

/** Payloads and offsets beyond this are a script mistake, not a device format. */
export const MAX_PAYLOAD = 65_536;
/** Bit fields are read as exact integers, so they live within 6 bytes (48 bits). */
export const MAX_BIT_BYTES = 6;

const SELECTOR_KEYS = new Set(['byte', 'endbyte', 'bytelength', 'byteorder', 'bit', 'bitlength', 'type', 'signed', 'calculation', 'comment']);
const TYPES = new Set(['integer', 'number', 'boolean', 'string', 'hexstring', 'int', 'uint', 'float', 'hex']);

export type SelectorUse = 'sense' | 'switch' | 'actuate';

/** True when an object is meant as a payload selector rather than an object of values. */
export function looksLikeSelector(value: Record<string, unknown>): boolean {
  for (const key of ['byte', 'endbyte'] as const) {
    if (Object.hasOwn(value, key) && (typeof value[key] !== 'object' || value[key] === null)) return true;
  }
  return false;
}


function isInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

type Issue = (where: string, message: string) => void;
type Anchor = FieldSpec['anchor'];

/** `byte`, `endbyte` and `bytelength`: where the field is and how many bytes it spans. */
function position(raw: Record<string, unknown>, issue: Issue, use: SelectorUse): { anchor: Anchor; length: number } {
  const hasByte = raw.byte !== undefined;
  const hasEnd = raw.endbyte !== undefined;
  if (hasByte && (!isInt(raw.byte) || raw.byte < 0 || raw.byte >= MAX_PAYLOAD)) issue('byte', `must be an integer from 0 to ${MAX_PAYLOAD - 1}`);
  if (hasEnd && (!isInt(raw.endbyte) || raw.endbyte > 0 || raw.endbyte < -MAX_PAYLOAD)) issue('endbyte', `must be an integer from -${MAX_PAYLOAD} to 0`);
  if (!hasByte && !hasEnd) issue('', 'a selector needs byte (or endbyte)');
  if (use === 'actuate' && hasEnd) issue('endbyte', 'actuate fields need a fixed position: use byte');
  const anchor = hasByte && hasEnd ? 'range' : hasEnd ? 'end' : 'start';

  if (raw.bytelength !== undefined) {
    if (anchor === 'range') issue('bytelength', 'not allowed with both byte and endbyte: the range sets the length');
    else if (!isInt(raw.bytelength) || raw.bytelength < 1 || raw.bytelength > MAX_PAYLOAD) issue('bytelength', `must be an integer from 1 to ${MAX_PAYLOAD}`);
  }
  return { anchor, length: anchor === 'range' ? 0 : isInt(raw.bytelength) ? raw.bytelength : 1 };
}

/** `type` and `signed`: how the bytes are read. */
function fieldKind(raw: Record<string, unknown>, issue: Issue, anchor: Anchor, length: number): FieldKind {
  let signed: boolean | undefined;
  if (raw.signed !== undefined) {
    if (raw.signed === true || raw.signed === 'true') signed = true;
    else if (raw.signed === false || raw.signed === 'false') signed = false;
    else issue('signed', 'must be true or false');
  }
  const type = raw.type ?? 'integer';
  if (typeof type !== 'string' || !TYPES.has(type)) {
    issue('type', 'must be one of integer, number, boolean, string, hexstring (or int, uint, float, hex)');
    return 'uint';
  }
  // `signed` means nothing for floats, booleans, strings and hex, and published scripts carry it
  // there (`"type": "hexstring", "signed": "false"`): it is ignored, not an error.
  switch (type) {
    case 'integer': return signed ? 'int' : 'uint';
    case 'int': return signed === false ? 'uint' : 'int';
    case 'uint':
      if (signed === true) issue('signed', 'uint is unsigned: use int or integer for signed values');
      return 'uint';
    case 'number':
      // `number` is an IEEE-754 float when it spans 4 or 8 bytes; published scripts also use it for
      // 1- and 2-byte integers, which read as integers (README.md).
      if (anchor === 'range') issue('type', "number needs a fixed bytelength: use float or integer with byte and endbyte");
      return raw.bit === undefined && (length === 4 || length === 8) ? 'float' : signed ? 'int' : 'uint';
    case 'float':
      if (anchor !== 'range' && length !== 2 && length !== 4 && length !== 8) issue('bytelength', 'float needs bytelength 2, 4 or 8');
      return 'float';
    case 'boolean': return 'bool';
    case 'string': return 'string';
    default: return 'hex';
  }
}

/** `bit` and `bitlength`: a bit field within an integer of `length` bytes. */
function bitField(raw: Record<string, unknown>, issue: Issue, kind: FieldKind, anchor: Anchor, length: number): { bit: number | undefined; bitlength: number } {
  const none = { bit: undefined, bitlength: 1 };
  if (raw.bit === undefined && raw.bitlength === undefined) return none;
  if (raw.bit === undefined) issue('bitlength', 'bitlength needs bit');
  else if (kind !== 'uint' && kind !== 'int' && kind !== 'bool') issue('bit', `bit fields hold integers or booleans, not ${String(raw.type)}`);
  else if (anchor === 'range') issue('bit', 'bit fields need a fixed bytelength');
  else if (length > MAX_BIT_BYTES) issue('bit', `bit fields span at most ${MAX_BIT_BYTES} bytes`);
  else if (!isInt(raw.bit) || raw.bit < 0 || raw.bit >= length * 8) issue('bit', `must be an integer from 0 to ${length * 8 - 1} (bit 0 is the least significant bit)`);
  else {
    const bit = raw.bit;
    if (raw.bitlength === undefined) return { bit, bitlength: 1 };
    if (isInt(raw.bitlength) && raw.bitlength >= 1 && bit + raw.bitlength <= length * 8) return { bit, bitlength: raw.bitlength };
    issue('bitlength', `must be an integer from 1 to ${length * 8 - bit} (bit + bitlength ≤ 8 × bytelength)`);
    return { bit, bitlength: 1 };
  }
  return none;
}

/** `calculation`: parsed, checked, and for actuate fields invertible. */
function calculation(raw: Record<string, unknown>, issue: Issue, kind: FieldKind, use: SelectorUse): CalcNode | undefined {
  if (raw.calculation === undefined) return undefined;
  if (typeof raw.calculation !== 'string') { issue('calculation', 'must be a string'); return undefined; }
  if (kind !== 'uint' && kind !== 'int' && kind !== 'float') { issue('calculation', `calculation needs a numeric type, not ${String(raw.type)}`); return undefined; }
  try {
    const calc = parseCalculation(raw.calculation);
    const problem = calculationProblem(calc);
    if (problem) issue('calculation', problem);
    else if (use === 'actuate' && !invertCalculation(calc)) {
      issue('calculation', 'cannot be inverted to encode a command: use val once, with + - * / and constants');
    }
    return calc;
  } catch (error) {
    issue('calculation', error instanceof CalculationError ? error.message : String(error));
    return undefined;
  }
}

/** The shortest payload a valid position can be read from. */
function minimumLength(issue: Issue, anchor: Anchor, offset: number, endOffset: number, length: number): number {
  let minLength: number;
  if (anchor === 'start') minLength = offset + length;
  else if (anchor === 'end') {
    if (offset === 0) issue('endbyte', 'endbyte alone counts back from the end and must be negative');
    else if (length > -offset) issue('bytelength', `${length} bytes from endbyte ${offset} run past the end of the payload`);
    minLength = -offset;
  } else minLength = offset - endOffset;
  if (minLength > MAX_PAYLOAD) issue('', `reaches beyond ${MAX_PAYLOAD} bytes`);
  return minLength;
}

/**
 * Checks a selector, pushing issues named by `path`; returns the spec when the selector is valid.
 * `use` restricts what the place allows (actuate fields need a fixed position and an invertible
 * calculation).
 */
export function resolveSelector(raw: unknown, path: string, issues: ScriptIssue[], use: SelectorUse): FieldSpec | undefined {
  const before = issues.length;
  const issue: Issue = (where, message) => { issues.push({ path: where ? `${path}.${where}` : path, message }); };
  if (!isPlainObject(raw)) { issue('', 'a selector must be an object'); return undefined; }
  for (const key of Object.keys(raw)) {
    if (key === 'json') issue(key, 'json selectors read JSON payloads; a binary script selects bytes with byte or endbyte');
    else if (!SELECTOR_KEYS.has(key)) issue(key, `unknown selector field '${key}'`);
  }
  const { anchor, length } = position(raw, issue, use);
  const little = raw.byteorder === 'little' || raw.byteorder === 'small';
  if (raw.byteorder !== undefined && raw.byteorder !== 'big' && !little) issue('byteorder', "must be 'big' or 'little'");
  const kind = fieldKind(raw, issue, anchor, length);
  const { bit, bitlength } = bitField(raw, issue, kind, anchor, length);
  const calc = calculation(raw, issue, kind, use);

  const offset = anchor === 'end' ? (raw.endbyte as number) : (raw.byte as number);
  const endOffset = anchor === 'range' ? (raw.endbyte as number) : 0;
  const minLength = issues.length === before ? minimumLength(issue, anchor, offset, endOffset, length) : 0;
  if (issues.length !== before) return undefined;
  return { anchor, offset, endOffset, length, little, kind, bit, bitlength, calc, minLength };
}
