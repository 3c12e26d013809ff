/**
 * Commands across processes (docs/scaling.md), on the real local log: a command owner's
 * RelayedTransport asks through topic `command-deliveries`, two edges' DeliveryRelays answer on
 * topic `commands`, and the owner's CommandPipeline hands their answers back. The edges' MQTT
 * transports are stand-ins holding a set of connected devices (the embedded edge's delivery is
 * tested in test/adapters/mqtt). Also the codec of the records involved, against malformed,
 * oversized and forged input.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { Connectivity } from '../../../engine/actors/Connectivity.ts';
import { CommandActors } from '../../../engine/actors/CommandActors.ts';
import { CommandPipeline } from '../../../engine/commands/CommandPipeline.ts';
import { DeliveryRelay } from '../../../engine/commands/DeliveryRelay.ts';
import { RelayedTransport } from '../../../engine/commands/RelayedTransport.ts';
import { decodeCommandsRecord, decodeDeliveryRequest, encodeCommandRecord, encodeOutcome, encodePresence } from '../../../engine/commands/commandRecords.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../../../engine/ports/commandTransport.ts';
import { partitionFor } from '../../../engine/ports/log.ts';
import type { CommandView } from '../../../schemas/commands.ts';
import { createLocalLog, type LocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const bytes = (s: string) => new TextEncoder().encode(s);
const TOPICS = { commands: 'commands', deliveries: 'command-deliveries' };
const PARTITIONS = 4;

/** An edge's MQTT transport: the devices connected to it, and what it delivered. */
class EdgeStandIn implements CommandTransport {
  readonly connected = new Set<string>();
  readonly delivered: AssetCommandDelivery[] = [];
  readonly #reachable = new Set<(deviceId: string) => void>();
  failWith: FleetError | undefined;

  onReachable(listener: (deviceId: string) => void): () => void {
    this.#reachable.add(listener);
    return () => this.#reachable.delete(listener);
  }

  connect(deviceId: string): void {
    this.connected.add(deviceId);
    for (const listener of this.#reachable) listener(deviceId);
  }

  listening(): Iterable<string> {
    return this.connected;
  }

  async deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome> {
    if (this.failWith !== undefined) throw this.failWith;
    if (!this.connected.has(delivery.deviceId)) return 'offline';
    this.delivered.push(delivery);
    return 'delivered';
  }
}

interface World {
  log: LocalLog;
  edges: { a: EdgeStandIn; b: EdgeStandIn };
  relays: DeliveryRelay[];
  connectivity: Connectivity;
  transport: RelayedTransport;
  actors: CommandActors;
  pipeline: CommandPipeline;
  changes: CommandView[];
  close(): Promise<void>;
}

async function world(options: { answerTimeoutMs?: number } = {}): Promise<World> {
  const tmp = tempDir('command-relay');
  const log = createLocalLog({ dir: tmp.dir });
  await log.ensureTopics([TOPICS.commands, TOPICS.deliveries].map((name) => ({ name, partitions: PARTITIONS })));
  const edges = { a: new EdgeStandIn(), b: new EdgeStandIn() };
  const relays = Object.entries(edges).map(([name, transport]) => new DeliveryRelay({
    log, clock: systemClock, edge: name, transport, topics: TOPICS, group: `deliveries.${name}`, shared: false, commitIntervalMs: 50,
  }));
  const connectivity = new Connectivity();
  const transport = new RelayedTransport({
    log, clock: systemClock, topic: TOPICS.deliveries, connectivity, tracked: true,
    answerTimeoutMs: options.answerTimeoutMs ?? 2000, partitionCount: () => log.partitionCount(TOPICS.commands),
  });
  const changes: CommandView[] = [];
  const actors = new CommandActors({ clock: systemClock, transport, retryBaseMs: 20, onChange: (view) => changes.push({ ...view }) });
  const pipeline = new CommandPipeline({
    log, actors, clock: systemClock, topic: TOPICS.commands, group: 'owners', commitIntervalMs: 50, edges: transport,
    directory: { getDevice: async () => undefined },
  });
  for (const relay of relays) await relay.start();
  await pipeline.start();
  // The owner took every partition: its roll call is the first request, answered by no edge yet.
  await waitFor(async () => (await requests(log)) === 1, 5000, 'the roll call of the new owner');
  await waitFor(() => relays.every((r) => r.rollCalls === 1), 5000, 'the roll call heard by both edges');
  return {
    log, edges, relays, connectivity, transport, actors, pipeline, changes,
    async close() {
      await pipeline.stop();
      transport.close();
      actors.stop();
      for (const relay of relays) await relay.stop();
      await log.close();
      tmp.remove();
    },
  };
}

const command = (id: string, deviceId: string, value: unknown) => encodeCommandRecord({
  id, deviceId, asset: 'level', value, issuer: 'user:u1', issuedAt: Date.now(), accepted: { assetId: 'asset-level' },
});

const requests = async (log: LocalLog) => (await log.endOffsets(TOPICS.deliveries)).reduce((a, b) => a + b, 0);

const statusOf = (w: World, id: string) => w.changes.filter((c) => c.id === id).map((c) => c.status);

test('a command reaches its device on the edge that holds the session, which the owner learnt from its presence', async () => {
  const w = await world();
  try {
    w.edges.b.connect('d1');
    await waitFor(() => w.connectivity.of('d1')?.edge === 'b', 5000, 'presence of d1 on edge b');
    await w.log.append(TOPICS.commands, [{ key: 'd1', value: command('c1', 'd1', 7) }]);
    await waitFor(() => statusOf(w, 'c1').includes('delivered'), 5000, 'c1 delivered');
    assert.equal(statusOf(w, 'c1'), ['queued', 'sent', 'delivered']);
    assert.equal(w.edges.b.delivered.map((d) => [d.commandId, JSON.parse(new TextDecoder().decode(d.payload)).value]), [['c1', 7]]);
    assert.is(w.edges.a.delivered.length, 0, 'the other edge delivered nothing');
  } finally {
    await w.close();
  }
});

test('a device no edge named waits queued, with no request sent, and is served once it connects anywhere', async () => {
  const w = await world();
  try {
    await w.log.append(TOPICS.commands, [{ key: 'd2', value: command('c2', 'd2', 1) }]);
    await waitFor(() => statusOf(w, 'c2').length >= 3, 5000, 'c2 tried');
    assert.equal(statusOf(w, 'c2'), ['queued', 'sent', 'queued'], 'offline at once');
    assert.is(await requests(w.log), 1, 'no request was sent (the one record is the roll call)');
    w.edges.a.connect('d2');
    await waitFor(() => statusOf(w, 'c2').includes('delivered'), 5000, 'c2 delivered after the presence');
    assert.equal(w.edges.a.delivered.map((d) => d.commandId), ['c2']);
  } finally {
    await w.close();
  }
});

test('a device gone from the edge named: that edge says offline, the owner forgets it, and the next presence routes the command', async () => {
  const w = await world();
  try {
    w.edges.a.connect('d3');
    await waitFor(() => w.connectivity.of('d3')?.edge === 'a', 5000, 'presence on a');
    w.edges.a.connected.delete('d3');
    await w.log.append(TOPICS.commands, [{ key: 'd3', value: command('c3', 'd3', 1) }]);
    await waitFor(() => statusOf(w, 'c3').length >= 3, 5000, 'c3 answered offline by edge a');
    assert.is(w.connectivity.of('d3'), undefined, 'edge a forgotten');
    w.edges.b.connect('d3');
    await waitFor(() => statusOf(w, 'c3').includes('delivered'), 5000, 'c3 delivered on edge b');
    assert.equal([w.edges.a.delivered.length, w.edges.b.delivered.map((d) => d.commandId)], [0, ['c3']]);
  } finally {
    await w.close();
  }
});

test('an edge that does not answer (killed) counts as offline after the answer timeout; a failure it reports keeps its code', async () => {
  const w = await world({ answerTimeoutMs: 300 });
  try {
    w.edges.a.connect('d4');
    await waitFor(() => w.connectivity.of('d4')?.edge === 'a', 5000, 'presence on a');
    await w.relays[0].stop();
    await w.log.append(TOPICS.commands, [{ key: 'd4', value: command('c4', 'd4', 1) }]);
    await waitFor(() => statusOf(w, 'c4').length >= 3, 5000, 'c4 unanswered');
    assert.equal(statusOf(w, 'c4'), ['queued', 'sent', 'queued']);
    assert.is(w.connectivity.of('d4'), undefined, 'the silent edge is forgotten');

    w.edges.b.failWith = new FleetError('DOWNLINK_REFUSED', 'the broker refused it');
    w.edges.b.connect('d4');
    await waitFor(() => statusOf(w, 'c4').includes('failed'), 5000, 'c4 failed as the edge reported');
    const failed = w.changes.filter((c) => c.id === 'c4').at(-1)!;
    assert.equal([failed.status, failed.code], ['failed', 'DOWNLINK_REFUSED']);
  } finally {
    await w.close();
  }
});

test('a roll call: an owner that takes partitions over hears again which devices of those partitions listen, on every edge', async () => {
  const w = await world();
  try {
    const ids = Array.from({ length: 40 }, (_, i) => `r${i}`);
    for (const id of ids) w.edges[Number(id.slice(1)) % 2 === 0 ? 'a' : 'b'].connected.add(id);
    const asked = [0, 2];
    w.transport.rollCall(asked);
    const expected = ids.filter((id) => asked.includes(partitionFor(id, PARTITIONS)));
    await waitFor(() => expected.every((id) => w.connectivity.of(id) !== undefined), 5000, 'presence of the partitions asked');
    for (const id of expected) assert.is(w.connectivity.of(id)!.edge, Number(id.slice(1)) % 2 === 0 ? 'a' : 'b', id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(ids.filter((id) => !asked.includes(partitionFor(id, PARTITIONS)) && w.connectivity.of(id) !== undefined), [], 'no presence for other partitions');
  } finally {
    await w.close();
  }
});

test('forged answers change nothing: an outcome naming another device, or a delivery never asked for', async () => {
  const w = await world({ answerTimeoutMs: 500 });
  try {
    w.edges.a.connect('d5');
    await waitFor(() => w.connectivity.of('d5')?.edge === 'a', 5000, 'presence on a');
    await w.relays[0].stop();
    await w.log.append(TOPICS.commands, [{ key: 'd5', value: command('c5', 'd5', 1) }]);
    await waitFor(() => w.transport.waiting === 1, 5000, 'a request waits for its answer');
    await w.log.append(TOPICS.commands, [
      { key: 'd5', value: encodeOutcome({ deliveryId: 'never-asked', commandId: 'c5', edge: 'x', result: 'delivered' }) },
      { key: 'other', value: encodeOutcome({ deliveryId: 'never-asked', commandId: 'c5', edge: 'x', result: 'delivered' }) },
    ]);
    await waitFor(() => statusOf(w, 'c5').length >= 3, 5000, 'c5 unanswered');
    assert.equal(statusOf(w, 'c5'), ['queued', 'sent', 'queued'], 'not delivered by a forged outcome');
  } finally {
    await w.close();
  }
});

test('the records of the relay refuse malformed, oversized and forged input with a stable code', () => {
  const refused = (value: Uint8Array) => {
    const out = decodeCommandsRecord(value);
    return out.ok ? ('presence' in out ? 'presence' : 'outcome' in out ? 'outcome' : 'command') : out.code;
  };
  assert.is(refused(encodePresence({ edge: 'a', at: 1 })), 'presence');
  assert.is(refused(encodeOutcome({ deliveryId: 'x', commandId: 'c', edge: 'a', result: 'offline' })), 'outcome');
  for (const hostile of [
    '{"presence":{"edge":"a","at":-1}}', '{"presence":{"edge":"","at":1}}', `{"presence":{"edge":"${'e'.repeat(129)}","at":1}}`,
    '{"presence":{"edge":"a","at":1,"extra":1}}', '{"presence":{"edge":"a","at":1},"id":"c1"}', '{"presence":null}',
    '{"outcome":{"deliveryId":"x","commandId":"c","edge":"a","result":"exploded"}}',
    `{"outcome":{"deliveryId":"x","commandId":"c","edge":"a","result":"failed","reason":"${'r'.repeat(1025)}"}}`,
    '{"outcome":{"deliveryId":"x","commandId":"c","edge":"a","result":"delivered","__proto__":{"polluted":true}}}',
  ]) assert.is(refused(bytes(hostile)), 'VALIDATION_FAILED', hostile.slice(0, 80));
  assert.is(({} as Record<string, unknown>).polluted, undefined);
  assert.is(refused(bytes('{"presence":')), 'MALFORMED_JSON', 'truncated');
  assert.is(refused(new Uint8Array([0x7b, 0xff, 0x7d])), 'MALFORMED_JSON', 'invalid UTF-8');

  const request = (s: string) => {
    const out = decodeDeliveryRequest(bytes(s));
    return out.ok ? ('rollCall' in out ? 'rollCall' : 'request') : out.code;
  };
  const ok = { deliveryId: 'd', commandId: 'c', deviceId: 'dev', asset: { id: 'a', name: 'level' }, payload: '{"value":1}' };
  assert.is(request(JSON.stringify(ok)), 'request');
  assert.is(request(JSON.stringify({ rollCall: { partitions: [0, 3], count: 4 } })), 'rollCall');
  for (const hostile of [
    { ...ok, payload: 'x'.repeat(1_048_577) }, { ...ok, to: '' }, { ...ok, asset: { name: 'level' } }, { ...ok, extra: true },
    { rollCall: { partitions: [], count: 4 } }, { rollCall: { partitions: [1.5], count: 4 } }, { rollCall: { partitions: [0], count: 0 } },
    { rollCall: { partitions: Array.from({ length: 100_001 }, () => 0), count: 4 } }, { rollCall: { partitions: [0], count: 4 }, deliveryId: 'd' },
  ]) assert.is(request(JSON.stringify(hostile)), 'VALIDATION_FAILED', JSON.stringify(hostile).slice(0, 80));
  assert.is(request('['), 'MALFORMED_JSON');
});

test('a malformed delivery request is skipped and reported; the edge goes on with the next', async () => {
  const w = await world();
  try {
    const errors: string[] = [];
    await w.relays[0].stop();
    const relay = new DeliveryRelay({
      log: w.log, clock: systemClock, edge: 'a', transport: w.edges.a, topics: TOPICS, group: 'deliveries.a2', shared: false, commitIntervalMs: 50,
      onError: (error) => errors.push(error.message),
    });
    await relay.start();
    w.edges.a.connect('d6');
    await waitFor(() => w.connectivity.of('d6')?.edge === 'a', 5000, 'presence on a');
    await w.log.append(TOPICS.deliveries, [{ key: 'd6', value: bytes('{"deliveryId":') }]);
    await w.log.append(TOPICS.commands, [{ key: 'd6', value: command('c6', 'd6', 1) }]);
    await waitFor(() => statusOf(w, 'c6').includes('delivered'), 5000, 'c6 delivered after the malformed request');
    assert.equal(errors.length, 1);
    assert.match(errors[0], /delivery request/);
    await relay.stop();
  } finally {
    await w.close();
  }
});

test('a device subscribing in a loop writes one presence per window, and the last word is written at its end', async () => {
  const w = await world();
  try {
    const presences = async () => {
      let n = 0;
      const consumer = w.log.consumer({ group: `count-${Math.random()}`, topics: [TOPICS.commands], startAt: 'earliest', onBatch: async (batch) => {
        for (const r of batch.records) if (r.key === 'loop') n++;
      } });
      await consumer.start();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await consumer.stop();
      return n;
    };
    for (let i = 0; i < 1000; i++) w.edges.a.connect('loop');
    await waitFor(() => w.connectivity.of('loop')?.edge === 'a', 5000, 'the first presence');
    assert.is(w.relays[0].presences, 1, 'one written at once');
    assert.is(w.relays[0].presencesHeld, 1, 'the rest held as one');
    await waitFor(() => w.relays[0].presences === 2, 5000, 'the held one written at the window\'s end');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.is(await presences(), 2, 'two records on the log for 1,000 subscriptions');
  } finally {
    await w.close();
  }
});

test.run();
