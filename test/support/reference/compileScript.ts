/**
 * Compiles a conversion script into a plain decoder (and, with an `actuate` block, an encoder): a
 * tree of closures built from the checked program. Nothing of the script is evaluated as
 * JavaScript (DESIGN.md §7). This is the reference implementation, kept for tests only: codecFor
 * runs the code engine/conversion/generateCodec.ts generates per device type, which
 * test/engine/conversion/conversion-generated.test.ts holds to the values and errors of these closures. The closures' call and store sites are shared by every
 * script in the process, so with many device types they turn megamorphic.
 */
import type { ConversionScript } from '../../../schemas/conversion.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { checkedProgram, type ActuationIR, type StatementIR, type ValueIR } from '../../../engine/conversion/analyzeScript.ts';
import { defineValue, getPath, guardDecode, guardEncode, internalize, setPath, type Codec, type DecodeMeta } from '../../../engine/conversion/codec.ts';
import { decodeFailed } from '../../../engine/conversion/readers.ts';
import { makeWriter } from '../../../engine/conversion/writers.ts';
import { makeReader, type Reader } from './closureReaders.ts';

export type { Codec, DecodeMeta } from '../../../engine/conversion/codec.ts';

/** Writes a block's assets into `out` (blocks that mix mappings and switches). */
type Into = (b: Uint8Array, out: Record<string, unknown>, meta: DecodeMeta | undefined) => void;
/** Returns a fresh object with a block's assets. */
type Produce = (b: Uint8Array, meta: DecodeMeta | undefined) => Record<string, unknown>;

function compileValue(value: ValueIR): Reader {
  switch (value.k) {
    case 'sel': return makeReader(value.spec, value.path);
    case 'lit': {
      const v = value.v;
      return () => v;
    }
    case 'obj': {
      const keys = value.fields.map(([k]) => internalize(k));
      const readers = value.fields.map(([, v]) => compileValue(v));
      return keys.length <= UNROLL ? literal(keys, readers) : (b) => {
        const o: Record<string, unknown> = {};
        for (let i = 0; i < keys.length; i++) defineValue(o, keys[i], readers[i](b));
        return o;
      };
    }
    case 'arr': {
      const readers = value.items.map(compileValue);
      return (b) => readers.map((r) => r(b));
    }
  }
}

/** Blocks of up to this many plain mappings are built by straight-line code. */
const UNROLL = 12;

/**
 * A fresh object with the given keys, filled by the readers in order. Each position is its own
 * store site, so for one script every site sees one key and one reader and V8 keeps it
 * monomorphic (a loop of `out[key] = value` is one megamorphic site, several times slower). With
 * many scripts in one process the sites turn megamorphic but stay on V8's fast stub-cache path,
 * which an object literal with computed keys does not (measured 11 M/s vs 1.8 M/s decodes for
 * 20 scripts of 6 fields).
 */
function literal(keys: readonly string[], readers: readonly Reader[]): Reader {
  const [k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11] = keys;
  const [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11] = readers;
  type O = Record<string, unknown>;
  switch (keys.length) {
    case 0: return () => ({});
    case 1: return (b) => { const o: O = {}; o[k0] = r0(b); return o; };
    case 2: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); return o; };
    case 3: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); return o; };
    case 4: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); return o; };
    case 5: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); return o; };
    case 6: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); return o; };
    case 7: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); return o; };
    case 8: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); o[k7] = r7(b); return o; };
    case 9: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); o[k7] = r7(b); o[k8] = r8(b); return o; };
    case 10: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); o[k7] = r7(b); o[k8] = r8(b); o[k9] = r9(b); return o; };
    case 11: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); o[k7] = r7(b); o[k8] = r8(b); o[k9] = r9(b); o[k10] = r10(b); return o; };
    default: return (b) => { const o: O = {}; o[k0] = r0(b); o[k1] = r1(b); o[k2] = r2(b); o[k3] = r3(b); o[k4] = r4(b); o[k5] = r5(b); o[k6] = r6(b); o[k7] = r7(b); o[k8] = r8(b); o[k9] = r9(b); o[k10] = r10(b); o[k11] = r11(b); return o; };
  }
}

function selectorOf(statement: Extract<StatementIR, { k: 'switch' }>): (b: Uint8Array, meta: DecodeMeta | undefined) => unknown {
  const { on } = statement;
  return on === '$payloadLength' ? (b) => b.length : on === '$fPort' ? (_b, meta) => meta?.fPort : makeReader(on.spec, on.path);
}

/**
 * A block checks once that the payload is long enough for all of its own selectors (a switch's
 * cases check their own), so readers index without per-field bounds checks.
 */
function need(statements: readonly StatementIR[]): number {
  return statements.reduce((m, s) => Math.max(m, s.minLength), 0);
}

function tooShort(statements: readonly StatementIR[], b: Uint8Array): FleetError {
  const s = statements.find((st) => st.minLength > b.length)!;
  return decodeFailed(`${s.k === 'map' ? `${s.path}.value` : `${s.path}.switch`} needs ${s.minLength} bytes, the payload has ${b.length}`);
}

function produceBlock(statements: readonly StatementIR[]): Produce {
  const min = need(statements);
  if (statements.length <= UNROLL && statements.every((s) => s.k === 'map' && s.asset.length === 1)) {
    const maps = statements as ReadonlyArray<Extract<StatementIR, { k: 'map' }>>;
    const build = literal(maps.map((s) => internalize(s.asset[0])), maps.map((s) => compileValue(s.value)));
    return (b) => {
      if (b.length < min) throw tooShort(statements, b);
      return build(b) as Record<string, unknown>;
    };
  }
  if (statements.length === 1 && statements[0].k === 'switch') {
    // The common shape `switch $payloadLength → flat blocks`: the chosen case's object is the result.
    const statement = statements[0];
    const select = selectorOf(statement);
    const cases = new Map<unknown, Produce>();
    for (const [value, body] of statement.cases) cases.set(value, produceBlock(body));
    const otherwise = statement.fallback ? produceBlock(statement.fallback) : undefined;
    return (b, meta) => {
      if (b.length < min) throw tooShort(statements, b);
      const run = cases.get(select(b, meta)) ?? otherwise;
      return run === undefined ? {} : run(b, meta);
    };
  }
  const run = intoBlock(statements);
  return (b, meta) => { const out: Record<string, unknown> = {}; run(b, out, meta); return out; };
}

function intoStatement(statement: StatementIR): Into {
  if (statement.k === 'map') {
    const read = compileValue(statement.value);
    const path = statement.asset.map(internalize);
    if (path.length === 1) { const key = path[0]; return (b, out) => { out[key] = read(b); }; }
    return (b, out) => setPath(out, path, read(b));
  }
  const select = selectorOf(statement);
  const cases = new Map<unknown, Into>();
  for (const [value, body] of statement.cases) cases.set(value, intoBlock(body));
  const otherwise = statement.fallback ? intoBlock(statement.fallback) : undefined;
  return (b, out, meta) => {
    const run = cases.get(select(b, meta)) ?? otherwise;
    if (run !== undefined) run(b, out, meta);
  };
}

function intoBlock(statements: readonly StatementIR[]): Into {
  const min = need(statements);
  const steps = statements.map(intoStatement);
  const n = steps.length;
  return (b, out, meta) => {
    if (b.length < min) throw tooShort(statements, b);
    for (let i = 0; i < n; i++) steps[i](b, out, meta);
  };
}

function compileEncoder(actuate: readonly ActuationIR[], length: number): NonNullable<Codec['encode']> {
  const steps = actuate.map((a) => {
    const write = makeWriter(a.spec, a.path);
    const { asset, constant, fallback } = a;
    const label = asset?.join('.');
    return (buf: Uint8Array, command: Record<string, unknown>) => {
      if (asset === undefined) { write(buf, constant); return; }
      let value = getPath(command, asset);
      if (value === undefined) value = fallback;
      if (value === undefined) throw new FleetError('VALIDATION_FAILED', `the command has no value for asset '${label}' (${a.path})`);
      write(buf, value);
    };
  });
  return guardEncode('conversion script', (command) => {
    const buf = new Uint8Array(length);
    for (const step of steps) step(buf, command);
    return buf;
  });
}

/**
 * Compiles a script (checked with checkScript first; an invalid script throws
 * FleetError('VALIDATION_FAILED') with the issues in `detail.issues`).
 */
export function compileScript(script: ConversionScript): Codec {
  const program = checkedProgram(script);
  const decode = guardDecode('conversion script', produceBlock(program.sense));
  if (program.actuate.length === 0) return { decode };
  return { decode, encode: compileEncoder(program.actuate, program.downlinkLength) };
}
