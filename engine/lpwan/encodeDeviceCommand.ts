/**
 * A device command (spec §2.4: asset name → value) as the bytes of one LoRaWAN downlink, in the
 * device type's format: the conversion script's `actuate` block for `binary`, Cayenne LPP for
 * `cayenne`, and the CBOR map of asset → value otherwise (`cbor`, and devices without a binary
 * format: spec §1 names CBOR the format of constrained networks).
 */
import { codecFor } from '../conversion/codecFor.ts';
import { cborCodec } from '../conversion/cborCodec.ts';
import { FleetError } from '../kernel/errors.ts';
import type { PayloadSettings } from '../ports/directory.ts';

/** The largest LoRaWAN application payload (LoRaWAN Regional Parameters: 242 bytes at the fastest data rates). */
export const MAX_DOWNLINK_BYTES = 242;

/** Throws VALIDATION_FAILED when the command does not encode or does not fit a downlink. */
export function encodeDeviceCommand(payload: PayloadSettings | undefined, assets: Record<string, unknown>): Uint8Array {
  const format = payload?.format;
  let bytes: Uint8Array;
  if (format === 'binary' || format === 'cayenne') {
    const encode = codecFor(payload)?.encode;
    if (encode === undefined) throw new FleetError('VALIDATION_FAILED', 'the device type\'s conversion script has no actuate block: it cannot encode commands');
    bytes = encode(assets);
  } else {
    bytes = cborCodec.encode!(assets);
  }
  if (bytes.byteLength > MAX_DOWNLINK_BYTES) {
    throw new FleetError('VALIDATION_FAILED', `the command encodes to ${bytes.byteLength} bytes; a LoRaWAN downlink carries at most ${MAX_DOWNLINK_BYTES}`);
  }
  return bytes;
}
