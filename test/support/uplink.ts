/** A test device and helpers shared by the uplink pipeline suites. */
import type { DeviceInfo } from '../../engine/ports/directory.ts';
import { compileDevice, type CompileDeviceOptions, type CompiledDevice } from '../../engine/uplink/admission/compileDevice.ts';
import { processUplink, type UplinkOutput } from '../../engine/uplink/admission/processUplink.ts';
import type { ContentType, UplinkEnvelope } from '../../schemas/messages.ts';

/** After every `at` the suites send: admission refuses an `at` more than a day ahead of the receive time. */
export const RECEIVED_AT = Date.UTC(2030, 0, 1);

export const testDeviceInfo: DeviceInfo = {
  id: 'dev-1',
  assets: [
    { id: 'a-temp', name: 'temperature', is: 'sensor', profile: { type: 'number', unit: '°C', minimum: -40, maximum: 85 } },
    { id: 'a-hum', name: 'humidity', is: 'sensor', profile: { type: 'integer', unit: '%', minimum: 0, maximum: 100 } },
    { id: 'a-door', name: 'door', is: 'sensor', profile: { type: 'boolean' } },
    {
      id: 'a-loc', name: 'location', is: 'sensor',
      profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } },
    },
    { id: 'a-label', name: 'label', is: 'virtual', profile: { type: 'string' } },
    { id: 'a-any', name: 'anything', is: 'virtual', profile: {} },
  ],
};

export function testDevice(options?: CompileDeviceOptions): CompiledDevice {
  return compileDevice(testDeviceInfo, options);
}

export function hexBytes(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function envelope(body: Uint8Array | string, contentType: ContentType, extra: Partial<UplinkEnvelope> = {}): UplinkEnvelope {
  return {
    id: 'up-1',
    channel: 'http',
    contentType,
    deviceId: 'dev-1',
    receivedAt: RECEIVED_AT,
    body: typeof body === 'string' ? new TextEncoder().encode(body) : body,
    ...extra,
  };
}

/** Runs one uplink into a fresh output. */
export function run(env: UplinkEnvelope, device: CompiledDevice = testDevice()): UplinkOutput {
  const out: UplinkOutput = { rows: [], rejections: [] };
  processUplink(env, device, out);
  return out;
}

/** Runs a JSON body (a string, or a value to stringify). */
export function runJson(body: unknown, extra: Partial<UplinkEnvelope> = {}, device?: CompiledDevice): UplinkOutput {
  return run(envelope(typeof body === 'string' ? body : JSON.stringify(body), 'json', extra), device);
}

/** [code, asset] pairs, for compact assertions. */
export function codes(out: UplinkOutput): Array<[string, string | undefined]> {
  return out.rejections.map((r) => [r.code, r.asset]);
}
