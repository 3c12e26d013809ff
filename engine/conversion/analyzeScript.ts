/**
 * Walks a conversion script once: every problem becomes a ScriptIssue named by its statement path
 * (`sense[2].value.byte`), and a valid script becomes a small resolved program that
 * compileScript turns into closures. Semantics: engine/conversion/README.md.
 */
import { FleetError } from '../kernel/errors.ts';
import { isPlainObject, looksLikeSelector, resolveSelector } from './fieldSpec.ts';
import type { FieldSpec, ScriptIssue } from './types.ts';
import { makeWriter } from './writers.ts';

export type ValueIR =
  | { readonly k: 'sel'; readonly spec: FieldSpec; readonly path: string }
  | { readonly k: 'lit'; readonly v: unknown }
  | { readonly k: 'obj'; readonly fields: ReadonlyArray<readonly [string, ValueIR]> }
  | { readonly k: 'arr'; readonly items: readonly ValueIR[] };

export type StatementIR =
  | { readonly k: 'map'; readonly asset: readonly string[]; readonly value: ValueIR; readonly minLength: number; readonly path: string }
  | {
    readonly k: 'switch';
    readonly on: '$payloadLength' | '$fPort' | { readonly spec: FieldSpec; readonly path: string };
    readonly cases: ReadonlyMap<unknown, readonly StatementIR[]>;
    readonly fallback: readonly StatementIR[] | undefined;
    readonly minLength: number;
    readonly path: string;
  };

export interface ActuationIR {
  readonly spec: FieldSpec;
  readonly path: string;
  /** Asset path (dots nest), or undefined for a `const` field. */
  readonly asset: readonly string[] | undefined;
  readonly constant: unknown;
  readonly fallback: unknown;
}

export interface Program {
  readonly sense: readonly StatementIR[];
  readonly actuate: readonly ActuationIR[];
  /** Downlink length: the end of the furthest actuate field. */
  readonly downlinkLength: number;
}

const MAX_STATEMENTS = 2_000;
const MAX_DEPTH = 16;
const MAX_ISSUES = 100;
const SELECTOR_ONLY = ['type', 'bytelength', 'byteorder', 'bit', 'bitlength', 'signed', 'calculation'];
const TOP_KEYS = new Set(['sense', 'actuate', 'name', 'comment', 'description', 'version']);

class Walker {
  readonly issues: ScriptIssue[] = [];
  statements = 0;

  issue(path: string, message: string): void {
    if (this.issues.length < MAX_ISSUES) this.issues.push({ path, message });
  }

  assetPath(raw: unknown, path: string): string[] | undefined {
    if (typeof raw !== 'string' || raw.length === 0) { this.issue(path, 'must be a non-empty string'); return undefined; }
    const parts = raw.split('.');
    if (parts.some((p) => p.length === 0)) { this.issue(path, 'empty segment in dotted asset name'); return undefined; }
    if (parts.includes('__proto__')) { this.issue(path, "'__proto__' cannot name an asset"); return undefined; }
    return parts;
  }

  value(raw: unknown, path: string, depth: number): ValueIR | undefined {
    if (raw === null || typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean') return { k: 'lit', v: raw };
    if (depth > MAX_DEPTH) { this.issue(path, `values nest deeper than ${MAX_DEPTH}`); return undefined; }
    if (Array.isArray(raw)) {
      const items = raw.map((item, i) => this.value(item, `${path}[${i}]`, depth + 1));
      return items.every((i) => i) ? { k: 'arr', items: items as ValueIR[] } : undefined;
    }
    if (!isPlainObject(raw)) { this.issue(path, 'must be a selector, an object of values, or a literal'); return undefined; }
    if (looksLikeSelector(raw) || Object.hasOwn(raw, 'json')) {
      const spec = resolveSelector(raw, path, this.issues, 'sense');
      return spec && { k: 'sel', spec, path };
    }
    // Selector fields without a position: a selector missing byte, not an object of values.
    if (SELECTOR_ONLY.some((k) => Object.hasOwn(raw, k) && (typeof raw[k] !== 'object' || raw[k] === null))) {
      this.issue(path, 'a selector needs byte (or endbyte)');
      return undefined;
    }
    const fields: Array<readonly [string, ValueIR]> = [];
    let ok = true;
    for (const [key, item] of Object.entries(raw)) {
      if (key === '__proto__') { this.issue(`${path}.${key}`, "'__proto__' cannot name a field"); ok = false; continue; }
      const v = this.value(item, `${path}.${key}`, depth + 1);
      if (v) fields.push([key, v]); else ok = false;
    }
    return ok ? { k: 'obj', fields } : undefined;
  }

  block(raw: unknown, path: string, depth: number, out: StatementIR[]): void {
    if (!Array.isArray(raw)) { this.issue(path, 'must be a list of statements'); return; }
    if (depth > MAX_DEPTH) { this.issue(path, `statements nest deeper than ${MAX_DEPTH}`); return; }
    raw.forEach((item, i) => {
      const where = `${path}[${i}]`;
      if (++this.statements > MAX_STATEMENTS) { if (this.statements === MAX_STATEMENTS + 1) this.issue(where, `more than ${MAX_STATEMENTS} statements`); return; }
      if (Array.isArray(item)) { this.block(item, where, depth + 1, out); return; }
      const statement = this.statement(item, where, depth);
      if (statement) out.push(statement);
    });
  }

  statement(raw: unknown, path: string, depth: number): StatementIR | undefined {
    if (!isPlainObject(raw)) { this.issue(path, 'a statement must be an object'); return undefined; }
    if (Object.hasOwn(raw, 'switch')) return this.control(raw, path, depth);
    if (!Object.hasOwn(raw, 'asset') && !Object.hasOwn(raw, 'value')) {
      if (Object.keys(raw).every((k) => k === 'comment')) return undefined;
      this.issue(path, 'a statement needs asset and value (mapping) or switch and on (control)');
      return undefined;
    }
    for (const key of Object.keys(raw)) if (key !== 'asset' && key !== 'value' && key !== 'comment') this.issue(`${path}.${key}`, `unknown statement field '${key}'`);
    const asset = this.assetPath(raw.asset, `${path}.asset`);
    if (!Object.hasOwn(raw, 'value')) { this.issue(`${path}.value`, 'required'); return undefined; }
    const value = this.value(raw.value, `${path}.value`, 0);
    if (!asset || !value) return undefined;
    return { k: 'map', asset, value, minLength: valueMinLength(value), path };
  }

  control(raw: Record<string, unknown>, path: string, depth: number): StatementIR | undefined {
    for (const key of Object.keys(raw)) if (key !== 'switch' && key !== 'on' && key !== 'comment') this.issue(`${path}.${key}`, `unknown statement field '${key}'`);
    let on: '$payloadLength' | '$fPort' | { spec: FieldSpec; path: string } | undefined;
    const sw = raw.switch;
    if (sw === '$payloadLength' || sw === '$fPort') on = sw;
    else if (isPlainObject(sw)) { const spec = resolveSelector(sw, `${path}.switch`, this.issues, 'switch'); if (spec) on = { spec, path: `${path}.switch` }; }
    else this.issue(`${path}.switch`, "must be a selector, '$payloadLength' or '$fPort'");
    const kind = on === undefined ? undefined : typeof on === 'string' ? 'length' : on.spec.kind;

    const cases = new Map<unknown, StatementIR[]>();
    let fallback: StatementIR[] | undefined;
    if (!Array.isArray(raw.on)) { this.issue(`${path}.on`, 'must be a list of cases'); return undefined; }
    raw.on.forEach((c, i) => {
      const where = `${path}.on[${i}]`;
      if (!isPlainObject(c)) { this.issue(where, 'a case must be an object'); return; }
      for (const key of Object.keys(c)) if (!['case', 'default', 'do', 'comment'].includes(key)) this.issue(`${where}.${key}`, `unknown case field '${key}'`);
      if (!Object.hasOwn(c, 'do') && Object.keys(c).every((k) => k === 'comment')) return;
      const body: StatementIR[] = [];
      this.block(c.do, `${where}.do`, depth + 1, body);
      const isDefault = c.case === '$default' || c.default === true;
      if (c.default !== undefined && c.default !== true) this.issue(`${where}.default`, 'must be true');
      if (isDefault) {
        if (c.case !== undefined && c.case !== '$default') this.issue(where, "a case is either a value or the default, not both");
        if (fallback) this.issue(where, 'more than one default case');
        fallback = body;
        return;
      }
      if (!Object.hasOwn(c, 'case')) { this.issue(`${where}.case`, "required (or default: true, or case: '$default')"); return; }
      let value = c.case;
      if (typeof value !== 'number' && typeof value !== 'string' && typeof value !== 'boolean') { this.issue(`${where}.case`, 'must be a number, a string or a boolean'); return; }
      const mismatch = kind === undefined ? undefined
        : kind === 'length' ? (typeof value !== 'number' || !Number.isInteger(value) || value < 0 ? `${String(sw)} is a non-negative integer` : undefined)
        : kind === 'bool' ? (typeof value !== 'boolean' ? 'the switch value is a boolean' : undefined)
        : kind === 'string' || kind === 'hex' ? (typeof value !== 'string' ? 'the switch value is a string' : undefined)
        : typeof value !== 'number' ? 'the switch value is a number' : undefined;
      if (mismatch) { this.issue(`${where}.case`, `never matches: ${mismatch}`); return; }
      if (kind === 'hex') value = (value as string).toLowerCase();
      if (cases.has(value)) { this.issue(`${where}.case`, `duplicate case ${JSON.stringify(value)}`); return; }
      cases.set(value, body);
    });
    if (on === undefined) return undefined;
    return { k: 'switch', on, cases, fallback, minLength: typeof on === 'string' ? 0 : on.spec.minLength, path };
  }

  actuation(raw: unknown, path: string, claimed: Map<number, { mask: number; owner: string }>): ActuationIR | undefined {
    if (!isPlainObject(raw)) { this.issue(path, 'an actuate statement must be an object'); return undefined; }
    for (const key of Object.keys(raw)) if (!['asset', 'const', 'field', 'default', 'comment'].includes(key)) this.issue(`${path}.${key}`, `unknown actuate field '${key}'`);
    const hasAsset = Object.hasOwn(raw, 'asset');
    const hasConst = Object.hasOwn(raw, 'const');
    if (hasAsset === hasConst) { this.issue(path, 'an actuate statement needs either asset or const'); return undefined; }
    const asset = hasAsset ? this.assetPath(raw.asset, `${path}.asset`) : undefined;
    if (hasConst && typeof raw.const !== 'number' && typeof raw.const !== 'string' && typeof raw.const !== 'boolean') this.issue(`${path}.const`, 'must be a number, a string or a boolean');
    if (hasConst && Object.hasOwn(raw, 'default')) this.issue(`${path}.default`, 'only an asset field has a default');
    if (!Object.hasOwn(raw, 'field')) { this.issue(`${path}.field`, 'required'); return undefined; }
    const before = this.issues.length;
    const spec = resolveSelector(raw.field, `${path}.field`, this.issues, 'actuate');
    if (!spec || this.issues.length !== before) return undefined;
    const write = makeWriter(spec, `${path}.field`);
    for (const key of ['const', 'default'] as const) {
      if (!Object.hasOwn(raw, key) || raw[key] === undefined) continue;
      try { write(new Uint8Array(spec.minLength), raw[key]); } catch (error) {
        this.issue(`${path}.${key}`, error instanceof FleetError ? error.message.replace(`${path}.field: `, '') : String(error));
      }
    }
    for (const [byte, mask] of coveredBits(spec)) {
      const seen = claimed.get(byte);
      if (seen && (seen.mask & mask) !== 0) this.issue(`${path}.field`, `overlaps ${seen.owner} at byte ${byte}`);
      claimed.set(byte, { mask: (seen?.mask ?? 0) | mask, owner: seen?.owner ?? `${path}.field` });
    }
    return { spec, path: `${path}.field`, asset, constant: hasConst ? raw.const : undefined, fallback: raw.default };
  }
}

function valueMinLength(value: ValueIR): number {
  if (value.k === 'sel') return value.spec.minLength;
  if (value.k === 'obj') return value.fields.reduce((m, [, v]) => Math.max(m, valueMinLength(v)), 0);
  if (value.k === 'arr') return value.items.reduce((m, v) => Math.max(m, valueMinLength(v)), 0);
  return 0;
}

/** (byte index, bit mask) pairs a fixed-position field writes. */
function coveredBits(spec: FieldSpec): Array<[number, number]> {
  const { offset: o, length: n, little, bit, bitlength } = spec;
  if (bit === undefined) return Array.from({ length: n }, (_, i) => [o + i, 0xff] as [number, number]);
  const out = new Map<number, number>();
  for (let i = bit; i < bit + bitlength; i++) {
    const byte = little ? o + Math.floor(i / 8) : o + n - 1 - Math.floor(i / 8);
    out.set(byte, (out.get(byte) ?? 0) | (1 << (i % 8)));
  }
  return [...out];
}

/** Checks and resolves a script; the program is present only when there are no issues. */
export function analyzeScript(script: unknown): { issues: ScriptIssue[]; program: Program | undefined } {
  const w = new Walker();
  if (!isPlainObject(script)) { w.issue('', 'a conversion script must be a JSON object'); return { issues: w.issues, program: undefined }; }
  for (const key of Object.keys(script)) {
    if (!TOP_KEYS.has(key)) w.issue(key, `unknown top-level field '${key}'`);
    else if (key !== 'sense' && key !== 'actuate' && typeof script[key] !== 'string') w.issue(key, 'must be a string');
  }
  if (script.sense === undefined && script.actuate === undefined) w.issue('', 'a script needs a sense or an actuate block');
  const sense: StatementIR[] = [];
  if (script.sense !== undefined) w.block(script.sense, 'sense', 0, sense);
  const actuate: ActuationIR[] = [];
  let downlinkLength = 0;
  if (script.actuate !== undefined) {
    if (!Array.isArray(script.actuate)) w.issue('actuate', 'must be a list of actuate statements');
    else {
      const claimed = new Map<number, { mask: number; owner: string }>();
      script.actuate.forEach((item, i) => {
        if (i >= MAX_STATEMENTS) { if (i === MAX_STATEMENTS) w.issue(`actuate[${i}]`, `more than ${MAX_STATEMENTS} statements`); return; }
        if (isPlainObject(item) && Object.keys(item).every((k) => k === 'comment')) return;
        const a = w.actuation(item, `actuate[${i}]`, claimed);
        if (a) { actuate.push(a); downlinkLength = Math.max(downlinkLength, a.spec.minLength); }
      });
    }
  }
  return { issues: w.issues.slice(0, MAX_ISSUES), program: w.issues.length === 0 ? { sense, actuate, downlinkLength } : undefined };
}

/**
 * The program of a script that must be valid: an invalid one throws FleetError('VALIDATION_FAILED')
 * with the issues in `detail.issues`.
 */
export function checkedProgram(script: unknown): Program {
  let analysis: ReturnType<typeof analyzeScript>;
  try {
    analysis = analyzeScript(script);
  } catch (error) {
    throw new FleetError('VALIDATION_FAILED', `invalid conversion script: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const { issues, program } = analysis;
  if (!program) {
    const first = issues[0];
    throw new FleetError('VALIDATION_FAILED', `invalid conversion script: ${first.path ? `${first.path}: ` : ''}${first.message}`, { detail: { issues } });
  }
  return program;
}
