/**
 * Cayenne LPP's decoder as generated code: the type table (cayenneTable.ts) unrolled into one
 * `switch` on the type byte, each case reading its fields inline at their resolution. It gives
 * what the table loop of test/support/reference/cayenneReference.ts gives, values and errors
 * alike; the generator's rules and checks are those of generateCodec.ts. Asset keys (`temperature_3`) depend
 * on the payload, so the result's stores stay keyed by data, as in the reference.
 */
import { BY_ID, type LppField } from './cayenneTable.ts';
import type { Codec } from './codec.ts';
import { instantiate } from './generateCodec.ts';
import { numberToken as num, SourceBuilder } from './SourceBuilder.ts';

/** A big-endian integer of `n` ≤ 4 bytes at `i + at`, as readUint and the LPP sign rule read it. */
function integer(at: number, f: LppField): string {
  const byte = (k: number) => `b[i + ${num(at + k)}]`;
  const n = f.bytes;
  if (n > 4 || (f.signed && n === 4)) throw new Error(`code generator: no inline read for a ${n}-byte LPP field`);
  if (n === 4) return `(${byte(0)} * 16777216 + ((${byte(1)} << 16) | (${byte(2)} << 8) | ${byte(3)}))`;
  const parts = Array.from({ length: n }, (_, k) => (k === n - 1 ? byte(k) : `(${byte(k)} << ${num(8 * (n - 1 - k))})`));
  // A signed field: the top byte's sign bit spread over the upper bits of a 32-bit integer.
  if (f.signed) parts[0] = `((${byte(0)} << 24) >> ${num(32 - 8 * n)})`;
  return `(${parts.join(' | ')})`;
}

function emitDecode(sb: SourceBuilder): string {
  const arms = [...BY_ID.values()].map((type) => {
    const t = sb.constant(type);
    let at = 2;
    const read = (f: LppField) => { const v = `(${integer(at, f)} / ${num(f.scale)})`; at += f.bytes; return v; };
    const store = type.fields.length === 1
      ? `out[lppKey(${t}, n)] = ${read(type.fields[0])};`
      : `{ const v = new ${sb.plainObject()}(); ${type.fields.map((f) => `v[${sb.constant(f.key)}] = ${read(f)};`).join(' ')} out[lppKey(${t}, n)] = v; }`;
    return `case ${num(type.id)}: if (i + ${num(2 + type.size)} > b.length) throw lppShort(${t}, n, b.length - i - 2); ${store} i += ${num(2 + type.size)}; break;`;
  });
  return `function decode(b, m) {
  if (!(b instanceof Uint8Array)) throw notBytes(type);
  try {
    const out = {};
    let i = 0;
    while (i < b.length) {
      if (i + 2 > b.length) throw lppCutOff(i);
      const n = b[i];
      switch (b[i + 1]) { ${arms.join('\n')} default: throw lppUnknown(b[i + 1], i + 1); }
    }
    return out;
  } catch (error) { throw decodeError(type, error); }
}`;
}

/** The generated decoder of Cayenne LPP, made once per process. */
export function generatedCayenneDecoder(): Codec['decode'] {
  const sb = new SourceBuilder();
  const decode = emitDecode(sb);
  const source = [`const { notBytes, decodeError, lppKey, lppCutOff, lppShort, lppUnknown } = h;`, sb.declarations, decode, 'return [decode, undefined];'].join('\n');
  return instantiate({ source, data: sb.data }, { name: 'Cayenne LPP' }).decode;
}
