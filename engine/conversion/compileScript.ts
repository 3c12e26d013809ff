/**
 * Compiles a conversion script, once per device type, into a plain decoder (and, with an `actuate`
 * block, an encoder): a tree of closures built from the checked program. Nothing of the script is
 * evaluated as JavaScript (DESIGN.md §7).
 */
import type { ConversionScript } from '../../schemas/conversion.ts';
import { FleetError } from '../errors.ts';
import { analyzeScript, type ActuationIR, type StatementIR, type ValueIR } from './analyzeScript.ts';
import { defineValue, getPath, guardDecode, guardEncode, setPath, type Codec, type DecodeMeta } from './codec.ts';
import { decodeFailed, makeReader, type Reader } from './readers.ts';
import { makeWriter } from './writers.ts';

export type { Codec, DecodeMeta } from './codec.ts';

type Exec = (b: Uint8Array, out: Record<string, unknown>, meta: DecodeMeta | undefined) => void;

function compileValue(value: ValueIR): Reader {
  switch (value.k) {
    case 'sel': return makeReader(value.spec, value.path);
    case 'lit': {
      const v = value.v;
      return () => v;
    }
    case 'obj': {
      const keys = value.fields.map(([k]) => k);
      const readers = value.fields.map(([, v]) => compileValue(v));
      const n = keys.length;
      if (keys.includes('__proto__')) return (b) => { const o: Record<string, unknown> = {}; for (let i = 0; i < n; i++) defineValue(o, keys[i], readers[i](b)); return o; };
      return (b) => {
        const o: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) o[keys[i]] = readers[i](b);
        return o;
      };
    }
    case 'arr': {
      const readers = value.items.map(compileValue);
      return (b) => readers.map((r) => r(b));
    }
  }
}

function compileStatement(statement: StatementIR): Exec {
  if (statement.k === 'map') {
    const read = compileValue(statement.value);
    if (statement.asset.length === 1) {
      const key = statement.asset[0];
      return (b, out) => { out[key] = read(b); };
    }
    const path = statement.asset;
    return (b, out) => setPath(out, path, read(b));
  }
  const { on, cases, fallback } = statement;
  const compiled = new Map<unknown, Exec>();
  for (const [value, body] of cases) compiled.set(value, compileBlock(body));
  const otherwise = fallback ? compileBlock(fallback) : undefined;
  const select: (b: Uint8Array, meta: DecodeMeta | undefined) => unknown = on === '$payloadLength' ? (b) => b.length
    : on === '$fPort' ? (_b, meta) => meta?.fPort
    : makeReader(on.spec, on.path);
  return (b, out, meta) => {
    const run = compiled.get(select(b, meta)) ?? otherwise;
    if (run !== undefined) run(b, out, meta);
  };
}

/**
 * A block checks once that the payload is long enough for all of its own selectors (a switch's
 * cases check their own), so readers index without per-field bounds checks.
 */
function compileBlock(statements: readonly StatementIR[]): Exec {
  const execs = statements.map(compileStatement);
  const need = statements.reduce((m, s) => Math.max(m, s.minLength), 0);
  const tooShort = (b: Uint8Array): FleetError => {
    const s = statements.find((st) => st.minLength > b.length)!;
    return decodeFailed(`${s.k === 'map' ? `${s.path}.value` : `${s.path}.switch`} needs ${s.minLength} bytes, the payload has ${b.length}`);
  };
  const n = execs.length;
  if (n === 0) return () => {};
  if (n === 1) {
    const only = execs[0];
    return need === 0 ? only : (b, out, meta) => { if (b.length < need) throw tooShort(b); only(b, out, meta); };
  }
  return (b, out, meta) => {
    if (b.length < need) throw tooShort(b);
    for (let i = 0; i < n; i++) execs[i](b, out, meta);
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
  const root = compileBlock(program.sense);
  const decode = guardDecode('conversion script', (bytes, meta) => {
    const out: Record<string, unknown> = {};
    root(bytes, out, meta);
    return out;
  });
  if (program.actuate.length === 0) return { decode };
  return { decode, encode: compileEncoder(program.actuate, program.downlinkLength) };
}
