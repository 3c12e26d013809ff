/**
 * The codec for a device's payload settings, so a device actor can plug
 * `(info) => codecFor(info.payload)?.decode` and the LPWAN downlink `codecFor(info.payload)?.encode`.
 * `binary` scripts are compiled once per script and cached, by object identity and by content (a
 * directory may rebuild the same device type object for every lookup).
 */
import type { ConversionScript } from '../../schemas/conversion.ts';
import { FleetError } from '../kernel/errors.ts';
import type { PayloadSettings } from '../ports/directory.ts';
import { cayenneCodec } from './cayenne.ts';
import { cborCodec } from './cborCodec.ts';
import type { Codec } from './codec.ts';
import { compileScript } from './compileScript.ts';

/** Distinct scripts kept compiled; a fleet has far fewer device types. */
const MAX_CACHED = 512;

const byIdentity = new WeakMap<object, Codec>();
const byContent = new Map<string, Codec>();

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
  let key: string | undefined;
  try { key = JSON.stringify(script); } catch { key = undefined; }
  let codec = key === undefined ? undefined : byContent.get(key);
  if (codec && key !== undefined) {
    // Refresh: the map iterates oldest first, so eviction drops the least recently used.
    byContent.delete(key);
    byContent.set(key, codec);
  }
  if (!codec) {
    try {
      codec = compileScript(script as ConversionScript);
    } catch (error) {
      codec = broken(error instanceof Error ? error.message.replace(/^invalid conversion script: /, '') : String(error));
    }
    if (key !== undefined) {
      byContent.set(key, codec);
      if (byContent.size > MAX_CACHED) byContent.delete(byContent.keys().next().value!);
    }
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
