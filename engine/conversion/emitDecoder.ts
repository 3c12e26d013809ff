/**
 * The source of a device type's decoder: the checked `sense` program as straight-line JavaScript.
 * It gives what the closure compiler (test/support/reference/compileScript.ts) gives for the same
 * program, values and errors alike. Every mapping is its own store site in code that belongs to
 * this device type alone, so V8 keeps each site monomorphic however many types a process runs;
 * the closures of the reference share their sites across types and turn megamorphic.
 */
import type { StatementIR, ValueIR } from './analyzeScript.ts';
import { internalize } from './codec.ts';
import { emitReader } from './emitReader.ts';
import { booleanToken, numberToken, type SourceBuilder } from './SourceBuilder.ts';

/** A property key as a constant; `__proto__` never gets this far (checkScript refuses it). */
function key(name: string, sb: SourceBuilder): string {
  if (name === '__proto__') throw new Error("code generator: '__proto__' cannot name a property");
  return sb.constant(internalize(name));
}

function value(v: ValueIR, sb: SourceBuilder): string {
  switch (v.k) {
    case 'sel': return emitReader(v.spec, v.path, sb);
    case 'lit': return sb.value(v.v);
    case 'arr': return `[${v.items.map((item) => value(item, sb)).join(', ')}]`;
    case 'obj': return sb.call(`const o = new ${sb.plainObject()}(); ${v.fields.map(([k, f]) => `o[${key(k, sb)}] = ${value(f, sb)};`).join(' ')} return o;`);
  }
}

/** The payload length check of a block: the first statement that does not fit names the error. */
function lengthCheck(statements: readonly StatementIR[], sb: SourceBuilder): string {
  const min = statements.reduce((m, s) => Math.max(m, s.minLength), 0);
  if (min === 0) return '';
  const needs = statements.map((s) => [s.minLength, s.k === 'map' ? `${s.path}.value` : `${s.path}.switch`] as const);
  return `if (b.length < ${numberToken(min)}) throw tooShort(${sb.constant(needs)}, b.length);`;
}

type SwitchIR = Extract<StatementIR, { k: 'switch' }>;

/**
 * A JavaScript `switch`. Case values that the generator can spell (finite numbers, booleans) are
 * case labels, and `===` matches them as the reference's Map does; other values (strings, which
 * never enter source) are looked up in a Map constant that gives the case's index. `returns`: the
 * bodies end in `return` (a block that is one switch), so no `break` follows them.
 */
function emitSwitch(s: SwitchIR, body: (statements: readonly StatementIR[]) => string, otherwise: string, returns: boolean, sb: SourceBuilder): string {
  const on = s.on === '$payloadLength' ? 'b.length' : s.on === '$fPort' ? 'm?.fPort' : emitReader(s.on.spec, s.on.path, sb);
  const cases = [...s.cases];
  const spelled = cases.every(([v]) => typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)));
  const label = (v: unknown, i: number) => (!spelled ? numberToken(i) : typeof v === 'boolean' ? booleanToken(v) : numberToken(v as number));
  const subject = spelled ? on : `${sb.constant(new Map(cases.map(([v], i) => [v, i])))}.get(${on})`;
  const arms = cases.map(([v, statements], i) => `case ${label(v, i)}: { ${body(statements)}${returns ? '' : ' break;'} }`);
  const fallback = s.fallback ? body(s.fallback) : otherwise;
  return `switch (${subject}) { ${arms.join(' ')}${fallback ? ` default: { ${fallback} }` : ''} }`;
}

/** Statements that write their assets into the object `o`. */
function into(statements: readonly StatementIR[], o: string, check: boolean, sb: SourceBuilder): string {
  const lines = check ? [lengthCheck(statements, sb)] : [];
  for (const s of statements) {
    if (s.k === 'switch') { lines.push(emitSwitch(s, (body) => into(body, o, true, sb), '', false, sb)); continue; }
    const read = value(s.value, sb);
    if (s.asset.length === 1) { lines.push(`${o}[${key(s.asset[0], sb)}] = ${read};`); continue; }
    // A dotted asset nests (`gps.lat`), reusing an object an earlier mapping made (codec.ts setPath).
    const v = sb.local('v');
    let target = o;
    const steps = [`const ${v} = ${read};`];
    for (const segment of s.asset.slice(0, -1)) {
      const k = key(segment, sb);
      const next = sb.local('n');
      steps.push(`let ${next} = Object.hasOwn(${target}, ${k}) ? ${target}[${k}] : undefined;`,
        `if (!isRecord(${next})) { ${next} = {}; ${target}[${k}] = ${next}; }`);
      target = next;
    }
    steps.push(`${target}[${key(s.asset[s.asset.length - 1], sb)}] = ${v};`);
    lines.push(`{ ${steps.join(' ')} }`);
  }
  return lines.filter(Boolean).join(' ');
}

/** A block that returns a fresh object with its assets; a block that is one switch returns its case's. */
function produce(statements: readonly StatementIR[], sb: SourceBuilder): string {
  const check = lengthCheck(statements, sb);
  if (statements.length === 1 && statements[0].k === 'switch') {
    return `${check} ${emitSwitch(statements[0], (body) => produce(body, sb), 'return {};', true, sb)}`;
  }
  const o = sb.local('o');
  return `${check} const ${o} = new ${sb.plainObject()}(); ${into(statements, o, false, sb)} return ${o};`;
}

/**
 * `function decode(b, m)`: bytes (checked to be a Uint8Array) and the uplink's meta; anything
 * thrown leaves as DECODE_FAILED, as guardDecode does for the reference.
 */
export function emitDecoder(sense: readonly StatementIR[], sb: SourceBuilder): string {
  return `function decode(b, m) {
  if (!(b instanceof Uint8Array)) throw notBytes(type);
  try { ${produce(sense, sb)} } catch (error) { throw decodeError(type, error); }
}`;
}
