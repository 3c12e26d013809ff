/**
 * Uplinks for the benches of the embedded service (integrations, rules): records as an edge
 * appends them to topic `uplinks` (with its decision), appended as fast as the log takes them,
 * and a wait until the engine has stored them all. Not a test.
 */
import type { Service } from '../../app/createService.ts';
import { newUplinkId } from '../../engine/kernel/ids.ts';
import { encodeEnvelope } from '../../engine/uplink/envelope.ts';
import type { ProducerRecord } from '../../engine/ports/log.ts';
import { Topics } from '../../schemas/messages.ts';

/** An uplink of `assets`, each with `value` (default k), as an edge appends it: its decision carried. */
export function uplinkRecord(deviceId: string, assets: readonly string[], k: number, receivedAt: number, value: (asset: string, k: number) => number = (_a, n) => n): ProducerRecord {
  const body = new TextEncoder().encode(JSON.stringify(Object.fromEntries(assets.map((a) => [a, { value: value(a, k) }]))));
  const admitted = { states: assets.map((a): [string, number, unknown] => [a, receivedAt, value(a, k)]), dropped: [] };
  return { key: deviceId, value: encodeEnvelope({ id: newUplinkId(receivedAt), channel: 'http', contentType: 'json', deviceId, receivedAt, body, admitted }) };
}

/** Appends `count` uplinks round the devices, 1000 a call, and resolves once the engine has stored them all. */
export async function ingest(service: Service, devices: readonly string[], assets: readonly string[], count: number, from = 0, value?: (asset: string, k: number) => number): Promise<void> {
  const ends = new Map<number, number>();
  const calls: Promise<void>[] = [];
  for (let k = from; k < from + count; k += 1000) {
    const now = Date.now();
    const records = Array.from({ length: Math.min(1000, from + count - k) }, (_, i) => uplinkRecord(devices[(k + i) % devices.length], assets, k + i, now, value));
    calls.push(service.log.append(Topics.uplinks, records).then((positions) => {
      for (const p of positions) ends.set(p.partition, Math.max(ends.get(p.partition) ?? 0, p.offset + 1));
    }));
    if (calls.length >= 8) await calls.shift();
  }
  await Promise.all(calls);
  if (!(await service.pipeline!.caughtUp(ends, 600_000))) throw new Error('the engine did not store every uplink');
}
