/**
 * What a device actor holds for its device (DESIGN.md §4): asset profiles compiled to checkers and
 * the binary decoder of its device type, built once when the actor starts, then reused for every
 * uplink.
 */
import type { AssetInfo, DeviceInfo } from '../../ports/directory.ts';
import { compileProfile, type ProfileChecker } from './profile.ts';

/** Metadata a binary decoder gets with each payload; only valid during the call. */
export interface BinaryMeta {
  fPort?: number;
}

/**
 * Decodes a binary payload into asset name → bare value. Throws (any error) when the payload does
 * not decode; the message becomes the rejection reason.
 */
export type BinaryDecoder = (bytes: Uint8Array, meta: BinaryMeta) => Record<string, unknown>;

export interface CompileDeviceOptions {
  /**
   * Supplies the decoder of binary uplinks for a device (from its device type's conversion
   * script), or undefined when the device has none. Default: no binary decoding.
   */
  binaryDecoder?: (info: DeviceInfo) => BinaryDecoder | undefined;
}

export interface CompiledAsset {
  info: AssetInfo;
  check: ProfileChecker;
}

export interface CompiledDevice {
  info: DeviceInfo;
  /** Asset name → asset and its profile checker. */
  assets: ReadonlyMap<string, CompiledAsset>;
  binaryDecoder: BinaryDecoder | undefined;
  /** Reused for every binary decode of this device (no per-message allocation). */
  binaryMeta: BinaryMeta;
}

export function compileDevice(info: DeviceInfo, options: CompileDeviceOptions = {}): CompiledDevice {
  const assets = new Map<string, CompiledAsset>();
  for (const asset of info.assets) {
    assets.set(asset.name, { info: asset, check: compileProfile(asset.profile) });
  }
  return {
    info,
    assets,
    binaryDecoder: options.binaryDecoder?.(info),
    binaryMeta: {},
  };
}
