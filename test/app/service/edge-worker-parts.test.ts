/**
 * The parts of embedded edge workers that take input from outside or from another process: the
 * primary's reading of a CONNECT's client id (app/mqttHandoff.ts) against MQTT 3.1.1 and 5 packets
 * made by mqtt-packet, truncated at every byte, malformed and oversized; and the calls between a
 * primary and its workers (app/workerChannel.ts): values and FleetErrors cross intact, nested
 * methods are called on their object, a gone process fails the calls waiting for it.
 */
import { EventEmitter } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqttPacket from 'mqtt-packet';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { clientIdOf } from '../../../app/mqttHandoff.ts';
import { WorkerChannel, type IpcPort } from '../../../app/workerChannel.ts';

const connect = (clientId: string, protocolVersion: 4 | 5, properties?: Record<string, unknown>) => mqttPacket.generate({
  cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 30, clientId, username: 'fsd_token', password: Buffer.from('fsd_token'),
  ...(properties === undefined ? {} : { properties }),
} as mqttPacket.IConnectPacket, { protocolVersion });

test('the client id of MQTT 3.1.1 and 5 CONNECTs, with and without properties; undefined until it is whole', () => {
  for (const [packet, id] of [
    [connect('device-1', 4), 'device-1'],
    [connect('ünïcødé-🚀', 4), 'ünïcødé-🚀'],
    [connect('v5-device', 5), 'v5-device'],
    [connect('v5-props', 5, { sessionExpiryInterval: 3600, receiveMaximum: 10, userProperties: { a: 'b'.repeat(300) } }), 'v5-props'],
  ] as const) {
    assert.is(clientIdOf(packet), id);
    // Every cut before the client id's end is "need more", never a wrong id.
    const end = packet.indexOf(Buffer.from(id)) + Buffer.byteLength(id);
    for (let cut = 0; cut < end; cut++) assert.is(clientIdOf(packet.subarray(0, cut)), undefined, `${id} cut at ${cut}`);
  }
});

test('no client id to route by: an empty one, another packet first, a malformed length', () => {
  assert.is(clientIdOf(connect('', 4)), null, 'empty: the server assigns one');
  assert.is(clientIdOf(mqttPacket.generate({ cmd: 'pingreq' })), null);
  assert.is(clientIdOf(Buffer.from('GET / HTTP/1.1\r\n\r\n')), null, 'HTTP');
  assert.is(clientIdOf(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])), null, 'a TLS ClientHello');
  assert.is(clientIdOf(Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f])), null, 'a remaining length of five bytes');
  // A v5 property length that never ends within 4 bytes.
  const v5 = Buffer.from([0x10, 0x20, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x05, 0x02, 0x00, 0x1e, 0xff, 0xff, 0xff, 0xff, 0x7f]);
  assert.is(clientIdOf(v5), null);
});

/** Two ends of an IPC channel in one process: what one sends, the other receives (as a structured clone). */
function pair(): [IpcPort & { gone(): void }, IpcPort & { gone(): void }] {
  const make = (): IpcPort & { emitter: EventEmitter; other?: { emitter: EventEmitter }; gone(): void } => {
    const emitter = new EventEmitter();
    const end = {
      emitter,
      send(message: unknown) {
        const copy = structuredClone(message);
        setImmediate(() => end.other!.emitter.emit('message', copy));
        return true;
      },
      on: (event: string, listener: (...args: unknown[]) => void) => emitter.on(event, listener),
      off: (event: string, listener: (...args: unknown[]) => void) => emitter.off(event, listener),
      once: (event: string, listener: (...args: unknown[]) => void) => emitter.once(event, listener),
      gone: () => emitter.emit('disconnect'),
    } as IpcPort & { emitter: EventEmitter; other?: { emitter: EventEmitter }; gone(): void };
    return end;
  };
  const a = make();
  const b = make();
  a.other = b;
  b.other = a;
  return [a, b];
}

test('calls cross with their values, nested methods run on their object, FleetErrors keep code, detail and retriability', async () => {
  const [primaryEnd, workerEnd] = pair();
  const primary = new WorkerChannel(primaryEnd);
  const worker = new WorkerChannel(workerEnd);
  const store = {
    rows: [1, 2, 3],
    commands: {
      owner: 'commands',
      async list(query: { deviceId: string }) {
        return { deviceId: query.deviceId, owner: this.owner, bytes: new Uint8Array([1, 2, 3]) };
      },
    },
    async fail() {
      throw new FleetError('COMMAND_QUEUE_FULL', 'full', { detail: { retryAfter: 5 } });
    },
    async crash() {
      throw new Error('an unexpected failure');
    },
  };
  primary.serve('store', store);
  const remote = worker.proxy<typeof store>('store');
  const listed = await remote.commands.list({ deviceId: 'd1' });
  assert.equal(listed, { deviceId: 'd1', owner: 'commands', bytes: new Uint8Array([1, 2, 3]) });
  assert.ok(listed.bytes instanceof Uint8Array);
  const failure = await remote.fail().then(() => undefined, (error: unknown) => error);
  assert.ok(failure instanceof FleetError);
  assert.equal([(failure as FleetError).code, (failure as FleetError).detail, (failure as FleetError).retriable, (failure as FleetError).status], ['COMMAND_QUEUE_FULL', { retryAfter: 5 }, true, 429]);
  const crash = await remote.crash().then(() => undefined, (error: unknown) => error as FleetError);
  assert.is(crash?.code, 'INTERNAL');
  const missing = await worker.call('nothing', ['x'], []).then(() => undefined, (error: unknown) => error as FleetError);
  assert.is(missing?.code, 'INTERNAL');
  const notCallable = await worker.call('store', ['rows'], []).then(() => undefined, (error: unknown) => error as FleetError);
  assert.match(notCallable!.message, /not callable/);
  // Awaiting a proxy is not a call.
  assert.is(await Promise.resolve(remote).then((r) => typeof r), 'function');
});

test('what one side sends in a turn leaves as one IPC message, in order; so do the answers; a send that throws fails its calls', async () => {
  const [primaryEnd, workerEnd] = pair();
  const sentBy = (end: IpcPort) => {
    const sent: unknown[] = [];
    const send = end.send.bind(end);
    end.send = (message: unknown) => { sent.push(message); return send(message); };
    return sent;
  };
  const fromWorker = sentBy(workerEnd);
  const fromPrimary = sentBy(primaryEnd);
  const primary = new WorkerChannel(primaryEnd);
  const worker = new WorkerChannel(workerEnd);
  const appended: number[] = [];
  primary.serve('log', { append: async (n: number) => { appended.push(n); return n * 2; } });
  const notes: unknown[] = [];
  worker.onNote('change', (value) => notes.push(value));
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => worker.call('log', ['append'], [i])));
  assert.equal(answers, Array.from({ length: 50 }, (_, i) => i * 2));
  assert.equal(appended, Array.from({ length: 50 }, (_, i) => i), 'served in the order called');
  assert.is(fromWorker.length, 1, 'fifty calls of one turn: one message');
  assert.is(fromPrimary.length, 1, 'their fifty answers: one message');
  // a note sent before an answer arrives before it
  primary.handle('ask', () => { primary.note('change', 'before the answer'); return 'answer'; });
  const answer = await worker.call('ask', [], []).then((value) => [...notes, value]);
  assert.equal(answer, ['before the answer', 'answer']);
  // a note leaves at once (a registry change must reach the workers before its maker goes on), with what was queued before it
  const sentBefore = fromPrimary.length;
  const queuedCall = primary.call('nothing-served', [], []).catch(() => undefined);
  primary.note('change', 'at once');
  assert.is(fromPrimary.length, sentBefore + 1, 'sent in the turn it was made, not at its end');
  assert.equal((fromPrimary.at(-1) as { messages: Array<{ fw: string }> }).messages.map((m) => m.fw), ['call', 'note'], 'the call queued before it leaves first');
  await queuedCall;
  // a channel whose send throws: the calls of that turn fail UNAVAILABLE, nothing waits forever
  workerEnd.send = () => { throw new Error('channel closed'); };
  const failed = await Promise.all([worker.call('log', ['append'], [1]), worker.call('log', ['append'], [2])].map((p) => p.then(() => undefined, (error: unknown) => (error as FleetError).code)));
  assert.equal(failed, ['UNAVAILABLE', 'UNAVAILABLE']);
});

test('a process that goes away fails the calls waiting for it, and later ones at once', async () => {
  const [primaryEnd, workerEnd] = pair();
  const primary = new WorkerChannel(primaryEnd);
  const worker = new WorkerChannel(workerEnd);
  primary.handle('slow', () => new Promise(() => undefined));
  const waiting = worker.call('slow', ['never'], []);
  await new Promise((resolve) => setImmediate(resolve));
  workerEnd.gone();
  const failure = await waiting.then(() => undefined, (error: unknown) => error as FleetError);
  assert.equal([failure?.code, failure?.retriable], ['UNAVAILABLE', true]);
  const later = await worker.call('slow', ['again'], []).then(() => undefined, (error: unknown) => error as FleetError);
  assert.is(later?.code, 'UNAVAILABLE');
});

test.run();
