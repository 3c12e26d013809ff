/**
 * The codec of topic `commands` (engine/commands/commandRecords.ts) and the reader's trust in it:
 * a record the edge checked is delivered as decided there, without reading its device again; one
 * without that decision (an application's) is checked against its device as before.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { acceptanceOf, decisionOf, decodeCommandRecord, encodeCommandRecord } from '../../../engine/commands/commandRecords.ts';
import type { AcceptedCommand, CommandActors } from '../../../engine/actors/CommandActors.ts';
import { CommandPipeline, type RejectedCommand } from '../../../engine/commands/CommandPipeline.ts';
import type { DeviceInfo } from '../../../engine/ports/directory.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { Topics } from '../../../schemas/messages.ts';
import type { CommandRecord } from '../../../schemas/commands.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const device: DeviceInfo = { id: 'd1', assets: [{ id: 'a-led', name: 'led', is: 'actuator', profile: { type: 'boolean' } }] };
const record: CommandRecord = { id: 'c1', deviceId: 'd1', asset: 'led', value: true, issuer: 'user:u1', issuedAt: Date.UTC(2026, 0, 1) };
const bytes = (s: string) => new TextEncoder().encode(s);

test('decoding refuses what is no command record, naming the command once its id is known', () => {
  const refused = (value: Uint8Array) => {
    const out = decodeCommandRecord(value);
    return out.ok ? 'ok' : `${out.code}${out.commandId === undefined ? '' : `:${out.commandId}`}`;
  };
  assert.is(refused(bytes('{')), 'MALFORMED_JSON');
  assert.is(refused(bytes('{"id": "c1"}')), 'VALIDATION_FAILED');
  assert.is(refused(encodeCommandRecord({ ...record, assets: { led: true } })), 'VALIDATION_FAILED:c1');
  assert.is(refused(encodeCommandRecord({ ...record, at: 'yesterday' })), 'INVALID_AT:c1');
  const out = decodeCommandRecord(encodeCommandRecord({ ...record, accepted: acceptanceOf(device, device.assets[0]) }));
  assert.ok(out.ok);
  if (out.ok) assert.equal([out.at, out.record.accepted], ['2026-01-01T00:00:00.000Z', { assetId: 'a-led' }]);
});

test('a forged or malformed decision is refused with the record, and a partial one is no decision', () => {
  const refusedWith = (accepted: unknown) => {
    const out = decodeCommandRecord(bytes(JSON.stringify({ ...record, accepted })));
    return out.ok ? 'ok' : out.code;
  };
  assert.is(refusedWith({ assetId: 5 }), 'VALIDATION_FAILED', 'an asset id that is no string');
  assert.is(refusedWith({ assetId: 'a-led', via: 'mqtt' }), 'VALIDATION_FAILED', 'a way out other than the downlink');
  assert.is(refusedWith({ assetId: 'a-led', trusted: true }), 'VALIDATION_FAILED', 'a key the decision does not have');
  assert.is(refusedWith({ assetId: 'x'.repeat(257) }), 'VALIDATION_FAILED', 'an oversized asset id');
  assert.is(refusedWith([]), 'VALIDATION_FAILED', 'a decision that is no object');
  // An asset command whose decision names no asset was not checked by an edge: its reader checks it.
  const partial = decodeCommandRecord(bytes(JSON.stringify({ ...record, accepted: {} })));
  assert.ok(partial.ok);
  if (partial.ok) assert.is(decisionOf(partial.record), undefined);
});

test('the reader delivers a record the edge checked as decided, and checks one without a decision against its device', async () => {
  const tmp = tempDir('command-records');
  const log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.commands, partitions: 1 }]);
  const lookups: string[] = [];
  const submitted: AcceptedCommand[] = [];
  const rejected: RejectedCommand[] = [];
  const actors = { submit: (c: AcceptedCommand, done: () => void) => { submitted.push(c); done(); }, release() {}, refuse() {} } as unknown as CommandActors;
  const directory = { getDevice: async (id: string) => { lookups.push(id); return id === 'd1' ? device : undefined; } };
  const pipeline = new CommandPipeline({ log, actors, directory, clock: systemClock, commitIntervalMs: 20, onRejected: (r) => rejected.push(r) });
  await log.append(Topics.commands, [
    // Decided at the edge: no look at the device, even one the directory does not know.
    { key: 'd2', value: encodeCommandRecord({ ...record, id: 'edge', deviceId: 'd2', accepted: { assetId: 'a-x', via: 'downlink' } }) },
    { key: 'd1', value: encodeCommandRecord({ ...record, id: 'app' }) },
    { key: 'd1', value: encodeCommandRecord({ ...record, id: 'off', value: 3 }) },
  ]);
  await pipeline.start();
  try {
    await waitFor(() => submitted.length + rejected.length === 3, 5000, 'three records read');
    assert.equal(submitted.map((c) => [c.id, c.kind === 'asset' ? [c.asset.id, c.via] : undefined]), [['edge', ['a-x', 'downlink']], ['app', ['a-led', 'mqtt']]]);
    assert.equal(rejected.map((r) => [r.commandId, r.code]), [['off', 'PROFILE_VIOLATION']]);
    assert.equal(lookups, ['d1', 'd1'], 'only the records without a decision read their device');
  } finally {
    await pipeline.stop();
    await log.close();
    tmp.remove();
  }
});

test.run();
