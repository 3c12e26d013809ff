/**
 * The codec for a device's payload settings, so a device actor can plug
 * `(info) => codecFor(info.payload)?.decode` and the LPWAN downlink `codecFor(info.payload)?.encode`.
 * `binary` scripts are compiled into code of their own once per content and shared while any
 * device holds them (codecCache.ts); a script object remembers its codec.
 */
import { FleetError } from '../kernel/errors.ts';
import type { PayloadSettings } from '../ports/directory.ts';
import { checkedProgram } from './analyzeScript.ts';
import { cayenneCodec } from './cayenne.ts';
import { cborCodec } from './cborCodec.ts';
import type { Codec } from './codec.ts';
import { compiledType } from './codecCache.ts';

/** Script object → codec: a directory that keeps its device type objects skips the analysis. */
const byIdentity = new WeakMap<object, Codec>();

/**
 * A stored script that no longer checks (the language changed, the row was edited by hand) turns
 * into a codec that rejects every payload with the reason, instead of failing the lookup.
 */
function broken(reason: string): Codec {
  return {
    decode: () => { throw new FleetError('DECODE_FAILED', `conversion script is invalid: ${reason}`); },
    encode: () => { throw new FleetError('VALIDATION_FAILED', `conversion script is invalid: ${reason}`); },
  };
}

function compileCached(script: unknown): Codec {
  if (typeof script !== 'object' || script === null) return broken('a conversion script must be a JSON object');
  const known = byIdentity.get(script);
  if (known) return known;
  let codec: Codec;
  try {
    codec = compiledType(checkedProgram(script)).codec;
  } catch (error) {
    codec = broken(error instanceof Error ? error.message.replace(/^invalid conversion script: /, '') : String(error));
  }
  byIdentity.set(script, codec);
  return codec;
}

/**
 * `binary` → the compiled conversion script; `cayenne` → Cayenne LPP; `cbor` → the CBOR map of
 * asset → value; `json` (parsed elsewhere) or no settings → undefined.
 */
export function codecFor(payload: PayloadSettings | undefined): Codec | undefined {
  switch (payload?.format) {
    case 'binary': return compileCached(payload.conversion);
    case 'cayenne': return cayenneCodec;
    case 'cbor': return cborCodec;
    default: return undefined;
  }
}
