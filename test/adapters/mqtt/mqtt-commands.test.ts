/**
 * Commands on the embedded broker: records on topic `commands` that validation refuses never reach
 * the device. Delivery on both topic shapes and the offline queue are in the MQTT edge contract
 * (test/adapters/mqtt/mqtt-edge-contract.test.ts), run by both MQTT edges.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { CommandActors } from '../../../engine/actors/CommandActors.ts';
import { CommandPipeline, type RejectedCommand } from '../../../engine/commands/CommandPipeline.ts';
import { registryDirectory } from '../../../engine/ports/registry.ts';
import { Topics } from '../../../schemas/messages.ts';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

let s: MqttStack;
let dev: SeededDevice;
let actors: CommandActors;
let pipeline: CommandPipeline;
const rejected: RejectedCommand[] = [];
let n = 0;

async function command(fields: Record<string, unknown>): Promise<string> {
  const id = `cmd-${++n}`;
  const record = { id, deviceId: dev.deviceId, issuer: 'app:test', issuedAt: Date.now(), ...fields };
  await s.log.append(Topics.commands, [{ key: String(record.deviceId), value: new TextEncoder().encode(JSON.stringify(record)) }]);
  return id;
}

test.before(async () => {
  s = await MqttStack.start({ edge: { ackTimeoutMs: 2000 } });
  dev = await s.device('valve', [
    { name: 'led', is: 'actuator', profile: { type: 'boolean' } },
    { name: 'level', is: 'actuator', profile: { type: 'integer', minimum: 0, maximum: 10 } },
    { name: 'temp', is: 'sensor', profile: { type: 'number' } },
  ]);
  actors = new CommandActors({ clock: systemClock, transport: s.edge.commands, retryBaseMs: 100 });
  pipeline = new CommandPipeline({ log: s.log, actors, directory: registryDirectory(s.registry), clock: systemClock, commitIntervalMs: 50, onRejected: (r) => rejected.push(r) });
  await pipeline.start();
});

test.after(async () => {
  await pipeline.stop();
  actors.stop();
  await s.stop();
});

test('invalid command records are refused with codes and never delivered', async () => {
  const c = await s.connect(dev.token);
  const got: string[] = [];
  c.on('message', (_t, p) => got.push(p.toString()));
  await c.subscribeAsync(`device/${dev.deviceId}/asset/+/command`, { qos: 1 });
  const before = rejected.length;
  await command({ asset: 'temp', value: 1 });
  await command({ asset: 'level', value: 11 });
  await command({ asset: 'level', value: 'high' });
  await command({ asset: 'nope', value: 1 });
  await command({ asset: 'led' });
  await command({ asset: 'led', value: true, assets: { led: true } });
  await command({ asset: 'led', value: true, at: 'yesterday' });
  await command({ asset: 'led', value: true, extra: 1 });
  await command({ deviceId: 'missing-device', asset: 'led', value: true });
  await s.log.append(Topics.commands, [{ key: dev.deviceId, value: new TextEncoder().encode('{not json') }]);
  await waitFor(() => rejected.length === before + 10, 5000, 'ten refusals');
  assert.equal(rejected.slice(before).map((r) => r.code), [
    'NOT_ACTUATOR', 'PROFILE_VIOLATION', 'PROFILE_VIOLATION', 'UNKNOWN_ASSET', 'VALIDATION_FAILED', 'VALIDATION_FAILED',
    'INVALID_AT', 'VALIDATION_FAILED', 'UNKNOWN_DEVICE', 'MALFORMED_JSON',
  ]);
  const ok = await command({ asset: 'led', value: false });
  await waitFor(() => got.length === 1, 5000, 'the valid one');
  assert.equal(JSON.parse(got[0]).value, false);
  assert.ok(actors.recent(dev.deviceId).some((v) => v.id === ok));
});

test.run();
