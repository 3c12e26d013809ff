/**
 * Cayenne LPP decoded by a loop over the type table: the reference the generated decoder
 * (engine/conversion/emitCayenne.ts, which cayenneCodec runs) is tested against, values and errors
 * alike.
 */
import { BY_ID, lppCutOff, lppKey, lppShort, lppUnknown, type LppField } from '../../../engine/conversion/cayenneTable.ts';
import { cayenneCodec } from '../../../engine/conversion/cayenne.ts';
import { guardDecode, type Codec } from '../../../engine/conversion/codec.ts';
import { readUint } from '../../../engine/conversion/readers.ts';

function readField(b: Uint8Array, o: number, f: LppField): number {
  let v = readUint(b, o, f.bytes, false);
  if (f.signed && v >= 2 ** (f.bytes * 8 - 1)) v -= 2 ** (f.bytes * 8);
  return v / f.scale;
}

function decodeCayenne(b: Uint8Array): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let i = 0;
  while (i < b.length) {
    if (i + 2 > b.length) throw lppCutOff(i);
    const channel = b[i];
    const type = BY_ID.get(b[i + 1]);
    if (!type) throw lppUnknown(b[i + 1], i + 1);
    i += 2;
    if (i + type.size > b.length) throw lppShort(type, channel, b.length - i);
    let value: unknown;
    if (type.fields.length === 1) {
      value = readField(b, i, type.fields[0]);
    } else {
      const o: Record<string, number> = {};
      let at = i;
      for (const f of type.fields) { o[f.key] = readField(b, at, f); at += f.bytes; }
      value = o;
    }
    // A repeated channel and type overwrites the earlier item: the later one is the newer reading.
    out[lppKey(type, channel)] = value;
    i += type.size;
  }
  return out;
}

export const cayenneReference: Codec = { decode: guardDecode('Cayenne LPP', decodeCayenne), encode: cayenneCodec.encode };
