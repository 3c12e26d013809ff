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

/**
 * Which measurement times (`at`, and an LPWAN network's receive time standing in for it) a state
 * may carry, relative to the receive time of its uplink (envelope.receivedAt, so a replay decides
 * the same). A device whose clock never synced sends 1970 or 2106; a state stamped far ahead would
 * stay "latest" until that date.
 */
export interface AtWindow {
  /** How far `at` may lie ahead of the receive time, ms (clock drift, batching at the network). */
  maxAheadMs: number;
  /** The earliest `at` accepted, epoch ms (0: 1970-01-01T00:00:00Z; Int64 `ts` holds earlier, but no device measured then). */
  minAt: number;
}

/** Default window: not more than one day ahead of receive time, not before 1970. */
export const DEFAULT_AT_WINDOW: Readonly<AtWindow> = Object.freeze({ maxAheadMs: 86_400_000, minAt: 0 });

export interface CompileDeviceOptions {
  /** Default DEFAULT_AT_WINDOW. */
  atWindow?: AtWindow;
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
  atWindow: Readonly<AtWindow>;
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
    atWindow: options.atWindow ?? DEFAULT_AT_WINDOW,
  };
}
