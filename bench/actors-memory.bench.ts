/**
 * Memory of the engine's per-device state, for bench/capacity.ts: heap per live device actor (a
 * device whose records carry no decision: its compiled profiles and mailbox) and per device whose
 * MQTT session its command owner knows (Connectivity). Each is measured as the heap held after a
 * full collection with N of them, minus the heap before, over N. Not part of the test suite.
 *
 *   node --expose-gc bench/actors-memory.bench.ts [actors=100000] [sessions=1000000]
 */
import { systemClock } from '../engine/kernel/clock.ts';
import { Connectivity } from '../engine/actors/Connectivity.ts';
import { DeviceActors } from '../engine/actors/DeviceActors.ts';
import { MemoryDirectory, type DeviceInfo } from '../engine/ports/directory.ts';
import type { UplinkWork } from '../engine/uplink/pipeline/types.ts';
import { recordCosts } from './support/costs.ts';

const ACTORS = Number(process.argv[2] ?? 100_000);
const SESSIONS = Number(process.argv[3] ?? 1_000_000);
const gc = globalThis.gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

function heldHeap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

async function perActor(): Promise<number> {
  const directory = new MemoryDirectory();
  const assets: DeviceInfo['assets'] = [
    { id: 'a-t', name: 'temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } },
    { id: 'a-h', name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } },
  ];
  for (let i = 0; i < ACTORS; i++) directory.put({ id: `dev-${i}`, assets });
  let emitted = 0;
  const actors = new DeviceActors({ directory, clock: systemClock, sink: { emit: () => { emitted++; } }, passivateAfterMs: 3_600_000, maxActors: ACTORS * 2 });
  const body = new TextEncoder().encode('{"temperature":{"value":21.5},"humidity":{"value":40}}');
  const before = heldHeap();
  for (let i = 0; i < ACTORS; i++) {
    const work: UplinkWork = { envelope: { id: `up-${i}`, channel: 'http', contentType: 'json', deviceId: `dev-${i}`, receivedAt: Date.now(), body }, partition: 0, offset: i };
    await actors.dispatch(work);
    if (i % 1000 === 0) await flush();
  }
  while (emitted < ACTORS) await flush();
  const after = heldHeap();
  const bytes = (after - before) / ACTORS;
  if (actors.size !== ACTORS) throw new Error(`${actors.size} actors live, expected ${ACTORS}`);
  actors.stop();
  return bytes;
}

function perSession(): number {
  const connectivity = new Connectivity({ maxDevices: SESSIONS * 2 });
  const ids = Array.from({ length: SESSIONS }, (_, i) => `device-${i.toString(36).padStart(22, '0')}`);
  const before = heldHeap();
  const now = Date.now();
  for (let i = 0; i < SESSIONS; i++) connectivity.reached(ids[i], `edge-host-1234-${i % 4}`, now + i);
  const after = heldHeap();
  if (connectivity.size !== SESSIONS) throw new Error('not every session kept');
  return (after - before) / SESSIONS;
}

const actorBytes = await perActor();
const sessionBytes = perSession();
console.log(`${ACTORS.toLocaleString('en-US')} live device actors: ${Math.round(actorBytes)} bytes each (${((actorBytes * 1_000_000) / 2 ** 20).toFixed(0)} MB per million)`);
console.log(`${SESSIONS.toLocaleString('en-US')} known sessions (Connectivity): ${Math.round(sessionBytes)} bytes each (${((sessionBytes * 1_000_000) / 2 ** 20).toFixed(0)} MB per million)`);
recordCosts(`bench/actors-memory.bench.ts ${ACTORS} ${SESSIONS}`, { engineBytesPerActor: actorBytes, ownerBytesPerDevice: sessionBytes });
