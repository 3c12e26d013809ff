/**
 * The Fleetstream side of bench/mqtt.bench.ts, run in a worker thread: a PGlite registry with the
 * bench's devices, the local log, the intake's admission, the embedded MQTT edge and the command
 * side, and (when asked) an external-mode instance on Mosquitto. The main thread asks by message
 * (ToWorker) and is answered (FromWorker).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createLocalLog } from '../../adapters/local-log/LocalLog.ts';
import { createExternalMqtt, type ExternalMqtt } from '../../adapters/mqtt/external/createExternalMqtt.ts';
import { createMqttEdge } from '../../adapters/mqtt/gateway/createMqttEdge.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import { CommandActors } from '../../engine/actors/CommandActors.ts';
import { CommandPipeline } from '../../engine/commands/CommandPipeline.ts';
import { commandDirectory } from '../../app/buildCommands.ts';
import { registryCacheTtlMs } from '../../app/buildEdges.ts';
import { InProcessRegistryChanges } from '../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { newId } from '../../engine/kernel/ids.ts';
import { buildIntake } from '../../app/buildIntake.ts';
import { Topics } from '../../schemas/messages.ts';
import { collect } from './collect.ts';

export const MOSQUITTO = 'mqtt://127.0.0.1:1883';

export interface Device { id: string; token: string; ledId: string }
export type ToWorker = { type: 'collect'; shrink?: boolean } | { type: 'count' } | { type: 'command'; deviceId: string; value: number } | { type: 'deliver'; device: Device; value: number } | { type: 'external'; on: boolean; connections?: number } | { type: 'stop' };
export type FromWorker = { type: 'ready'; port: number; devices: Device[] } | { type: 'collected' } | { type: 'count'; appended: number; cpuMicros: number } | { type: 'external'; brokerDropped: number } | { type: 'stopped' };

async function engineThread(deviceCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-mqtt-bench-'));
  const registry = await createPgliteRegistry();
  const user = await registry.createUser({ name: 'bench' });
  const ground = await registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Device[] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await registry.createDevice({
      groundId: ground.id, name: `bench-${i}`,
      assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'number' } }],
    });
    devices.push({ id: device.id, token, ledId: device.assets.find((a) => a.name === 'led')!.id });
  }
  const log = createLocalLog({ dir: join(dir, 'log') });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 8 }, { name: Topics.commands, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }]);
  let appended = 0;
  const intake = buildIntake({
    clock: systemClock,
    rejections: { append: async () => undefined },
    log: { append: async (topic, records) => { const p = await log.append(topic, records); if (topic === Topics.uplinks) appended += records.length; return p; } },
  });
  const { admission } = intake;
  // Registry answers cached as the embedded service caches them (app/buildEdges.ts), kept current by registry changes.
  const changes = new InProcessRegistryChanges();
  const cacheTtlMs = registryCacheTtlMs({});
  const edge = await createMqttEdge({ registry, changes, cacheTtlMs, admission, clock: systemClock, port: 0, host: '127.0.0.1' });
  const actors = new CommandActors({ clock: systemClock, transport: edge.commands });
  // Devices looked up per command as the service does (app/buildCommands.ts): cached, kept current by registry changes.
  const { directory } = commandDirectory({ registry, changes, clock: systemClock, cacheTtlMs });
  const commands = new CommandPipeline({ log, actors, directory, clock: systemClock, commitIntervalMs: 50 });
  await commands.start();
  let external: ExternalMqtt | undefined;
  const post = (m: FromWorker) => parentPort!.postMessage(m);
  parentPort!.on('message', async (m: ToWorker) => {
    if (m.type === 'collect') {
      collect(m.shrink);
      post({ type: 'collected' });
    } else if (m.type === 'count') {
      const cpu = process.threadCpuUsage();
      post({ type: 'count', appended, cpuMicros: cpu.user + cpu.system });
    }
    else if (m.type === 'command') {
      const record = { id: newId(), deviceId: m.deviceId, asset: 'led', value: m.value, issuer: 'app:bench', issuedAt: Date.now() };
      await log.append(Topics.commands, [{ key: m.deviceId, value: new TextEncoder().encode(JSON.stringify(record)) }]);
    } else if (m.type === 'deliver') {
      // The edge alone: CommandTransport.deliver as a command actor calls it.
      const payload = new TextEncoder().encode(JSON.stringify({ value: m.value, at: new Date().toISOString() }));
      void edge.commands.deliver({ commandId: newId(), deviceId: m.device.id, asset: { id: m.device.ledId, name: 'led' }, payload });
    } else if (m.type === 'external') {
      if (m.on) external = await createExternalMqtt({ url: MOSQUITTO, registry, changes, cacheTtlMs, admission, clock: systemClock, shareGroup: `fsbench-${process.pid}`, connections: m.connections });
      else await external?.close();
      post({ type: 'external', brokerDropped: external?.stats.brokerDropped ?? 0 });
    } else {
      await commands.stop();
      actors.stop();
      await edge.close();
      await intake.close();
      await log.close();
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
      post({ type: 'stopped' });
    }
  });
  post({ type: 'ready', port: edge.port, devices });
}

if (!isMainThread) await engineThread(workerData as number);
