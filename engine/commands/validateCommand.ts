/**
 * Checks a command against its device before it is queued: the asset exists, is an actuator (only
 * actuators take commands), and the value fits the asset profile (engine/uplink/admission/profile.ts).
 * For a device on a LoRaWAN network, also that the command can leave at all: its network takes
 * downlinks and its device type encodes the command (checkDownlink).
 */
import type { AssetInfo, DeviceInfo } from '../ports/directory.ts';
import { compileProfile } from '../uplink/admission/profile.ts';
import type { Decision } from '../access/mqttTopics.ts';
import { isFleetError } from '../kernel/errors.ts';
import { encodeDeviceCommand } from '../lpwan/encodeDeviceCommand.ts';
import { networks } from '../activation/networks.ts';
import { lpwanNetworkOf } from './lpwanNetworkOf.ts';

/** Compiled per profile object: a device read from the registry keeps its assets' profiles until it changes. */
const compiled = new WeakMap<object, (value: unknown) => string | undefined>();

function checkOf(profile: AssetInfo['profile']): (value: unknown) => string | undefined {
  if (typeof profile !== 'object' || profile === null) return compileProfile(profile);
  let check = compiled.get(profile);
  if (check === undefined) compiled.set(profile, (check = compileProfile(profile)));
  return check;
}

function checkOne(device: DeviceInfo, name: string, value: unknown): Decision<AssetInfo> {
  const asset = device.assets.find((a) => a.name === name);
  if (asset === undefined) return { ok: false, code: 'UNKNOWN_ASSET', reason: `device ${device.id} has no asset "${name.slice(0, 80)}"` };
  if (asset.is !== 'actuator') return { ok: false, code: 'NOT_ACTUATOR', reason: `asset "${name}" is a ${asset.is}; only actuators take commands` };
  if (value === undefined) return { ok: false, code: 'VALIDATION_FAILED', reason: `a command for "${name}" needs a value` };
  let problem: string | undefined;
  try {
    problem = checkOf(asset.profile)(value);
  } catch (error) {
    return { ok: false, code: 'PROFILE_VIOLATION', reason: `asset "${name}" has an unusable profile: ${(error as Error).message}` };
  }
  if (problem !== undefined) return { ok: false, code: 'PROFILE_VIOLATION', reason: `"${name}": ${problem}` };
  return { ok: true, value: asset };
}

export function validateAssetCommand(device: DeviceInfo, asset: string, value: unknown): Decision<AssetInfo> {
  return checkOne(device, asset, value);
}

export function validateDeviceCommand(device: DeviceInfo, assets: Record<string, unknown>): Decision<AssetInfo[]> {
  const names = Object.keys(assets);
  if (names.length === 0) return { ok: false, code: 'VALIDATION_FAILED', reason: 'a device command names at least one asset' };
  const out: AssetInfo[] = [];
  for (const name of names) {
    const one = checkOne(device, name, assets[name]);
    if (!one.ok) return one;
    out.push(one.value);
  }
  return { ok: true, value: out };
}

/**
 * For a device on a LoRaWAN network, what can be known before the command is queued of whether it
 * will leave (spec §4.4): NO_DOWNLINK when its network takes no downlinks, VALIDATION_FAILED when
 * its device type does not encode `assets` (no `actuate` block, an asset the block needs and has no
 * default for, a value out of range, more than a downlink carries), the same codes the command
 * would fail with later. `asset` names the asset command these assets come from. Devices on no
 * LoRaWAN network pass: their commands go over MQTT, or fail NO_DOWNLINK as before.
 */
export function checkDownlink(device: DeviceInfo, assets: Record<string, unknown>, asset?: string): Decision<undefined> {
  const network = lpwanNetworkOf(device);
  if (network === undefined) return { ok: true, value: undefined };
  if (!network.downlink) {
    const over = networks.list().filter((n) => n.downlink).map((n) => n.id).join(', ');
    return { ok: false, code: 'NO_DOWNLINK', reason: `device ${device.id} is on ${network.id}, which takes no downlinks; LPWAN commands go over ${over} only (spec §4.4)` };
  }
  try {
    encodeDeviceCommand(device.payload, assets);
  } catch (error) {
    if (!isFleetError(error) || error.code !== 'VALIDATION_FAILED') throw error;
    const why = asset === undefined ? '' : `an asset command to a LoRaWAN device goes out as a device command holding only "${asset}": `;
    return { ok: false, code: 'VALIDATION_FAILED', reason: `${why}${error.message}` };
  }
  return { ok: true, value: undefined };
}
