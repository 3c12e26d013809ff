/**
 * How the service compiles a device for admission: asset profiles, and the binary decoder of the
 * device's payload format (engine/conversion/codecFor.ts: conversion scripts, Cayenne LPP, CBOR).
 */
import { codecFor } from '../engine/conversion/codecFor.ts';
import type { DeviceInfo } from '../engine/ports/directory.ts';
import type { Config } from '../schemas/config.ts';
import { compileDevice, type AtWindow, type CompiledDevice } from '../engine/uplink/admission/compileDevice.ts';

export function compileServiceDevice(info: DeviceInfo, atWindow?: AtWindow): CompiledDevice {
  return compileDevice(info, { binaryDecoder: (device) => codecFor(device.payload)?.decode, atWindow });
}

/** The `at` window of admission, from the configuration (tests may pass configs made before it existed). */
export function atWindowOf(config: Config): AtWindow | undefined {
  const u = config.uplinks as Config['uplinks'] | undefined;
  return u === undefined ? undefined : { maxAheadMs: u.atMaxAheadMs, minAt: u.atMinMs };
}

/** The service's compiler with the configured `at` window (schemas/config.ts `uplinks`). */
export function serviceCompiler(atWindow?: AtWindow): (info: DeviceInfo) => CompiledDevice {
  return (info) => compileServiceDevice(info, atWindow);
}
