/**
 * Deterministic uplinks of the crash test: uplink k belongs to device k % devices, carries the 4
 * assets below with values and `at` derived from k, so the parent can check every stored state
 * against what the child appended without sharing anything but k.
 */
import type { DeviceInfo } from '../../engine/ports/directory.ts';
import type { JsonValue, UplinkEnvelope } from '../../schemas/messages.ts';

export const CRASH_ASSETS = ['temperature', 'humidity', 'on', 'label'] as const;
export type CrashAsset = (typeof CRASH_ASSETS)[number];

const PROFILES: Record<CrashAsset, Record<string, unknown>> = {
  temperature: { type: 'number', minimum: -50, maximum: 100 },
  humidity: { type: 'integer', minimum: 0, maximum: 100 },
  on: { type: 'boolean' },
  label: { type: 'string' },
};

const T0 = Date.UTC(2026, 0, 1);

export function crashDevice(d: number): DeviceInfo {
  return {
    id: `dev${d}`,
    assets: CRASH_ASSETS.map((name) => ({ id: `a-${d}-${name}`, name, is: 'sensor' as const, profile: PROFILES[name] })),
  };
}

export function crashDeviceOf(k: number, devices: number): string {
  return `dev${k % devices}`;
}

/** Measurement time of uplink k (one second apart, so no two uplinks of a device share a ts). */
export function crashAt(k: number): number {
  return T0 + k * 1000;
}

export function crashValues(k: number): Record<CrashAsset, JsonValue> {
  return {
    temperature: ((k * 7) % 1500) / 10 - 50,
    humidity: k % 101,
    on: k % 3 === 0,
    label: `L${k}`,
  };
}

export function crashUplink(k: number, devices: number): UplinkEnvelope {
  const at = new Date(crashAt(k)).toISOString();
  const values = crashValues(k);
  const state: Record<string, { value: JsonValue; at: string }> = {};
  for (const name of CRASH_ASSETS) state[name] = { value: values[name], at };
  return {
    id: `u${k}`,
    channel: 'http',
    contentType: 'json',
    deviceId: crashDeviceOf(k, devices),
    receivedAt: T0 + 10_000_000_000 + k,
    body: new TextEncoder().encode(JSON.stringify(state)),
  };
}

/** k of an uplink id written by crashUplink, or undefined for anything else. */
export function crashK(uplinkId: string): number | undefined {
  const m = /^u(0|[1-9][0-9]*)$/.exec(uplinkId);
  return m ? Number(m[1]) : undefined;
}
