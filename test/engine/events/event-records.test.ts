/**
 * Records of topic `events` (engine/events/eventRecords.ts) are compact and their text written by
 * hand for speed; expanded (engine/events/expandEventsRecord.ts) they must give exactly the events
 * an object serializer gave when each event was written out, field order included (receivers get
 * those bytes), whatever the strings hold (quotes, backslashes, control characters, lone
 * surrogates, non-ASCII) and whatever the values are; ids derived from the source, the same on a
 * replay.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { alarmEvent, alarmEventsRecord, commandEventRecord, uplinkEventsRecord } from '../../../engine/events/eventRecords.ts';
import { expandEventsRecord } from '../../../engine/events/expandEventsRecord.ts';
import type { ProducerRecord } from '../../../engine/ports/log.ts';
import type { Alarm } from '../../../engine/ports/alarmRegistry.ts';
import type { CommandView } from '../../../schemas/commands.ts';
import type { DeadLetter, StateRow, UplinkEnvelope } from '../../../schemas/messages.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const decoder = new TextDecoder('utf-8', { fatal: true });
const parse = (record: ProducerRecord | undefined) => JSON.parse(decoder.decode(record!.value));
const expand = (record: ProducerRecord | undefined) => expandEventsRecord(String(record!.key), parse(record));
/** Through JSON, as a receiver gets it: field order and values as the bytes say. */
const wire = (value: unknown) => JSON.stringify(value);

/** The events of `rows` as they were written out, one object each, in this field order. */
function expected(rows: StateRow[]) {
  return rows.map((row) => ({
    type: 'state', id: `${row.uplinkId}/${row.asset}/${row.ts}/${row.seq ?? 0}`, deviceId: row.deviceId,
    asset: row.asset, value: row.value, at: iso(row.ts), receivedAt: iso(row.receivedAt), uplinkId: row.uplinkId,
  }));
}

const receivedAt = Date.UTC(2026, 10, 28, 12, 0, 0, 123);
const row = (asset: string, value: unknown, extra: Partial<StateRow> = {}): StateRow => ({ deviceId: 'dev1', asset, ts: receivedAt, receivedAt, value: value as StateRow['value'], uplinkId: 'up1', seq: 0, ...extra });

test('plain rows: the same events as objects gave, in order, with the source; shared fields once', () => {
  const rows = [row('t', 21.5), row('h', 40, { ts: receivedAt - 60_000, seq: 1 }), row('on', true), row('mode', 'eco'), row('cfg', { a: [1, null, 'x'] }), row('n', -0), row('big', 1e21), row('tiny', 5e-7)];
  const record = uplinkEventsRecord(rows, [], { partition: 3, offset: 1841 }, 99)!;
  assert.is(record.key, 'dev1');
  assert.is(record.timestamp, 99);
  const parsed = parse(record);
  assert.equal(Object.keys(parsed), ['source', 'deviceId', 'uplinkId', 'receivedAt', 'states']);
  assert.equal(parsed.states[0], ['t', receivedAt, 21.5]);
  assert.equal(parsed.states[1], ['h', receivedAt - 60_000, 40, 1], 'a reading other than the first carries its index');
  const expanded = expand(record)!;
  assert.equal(expanded.source, { partition: 3, offset: 1841 });
  assert.is(wire(expanded.events), wire(expected(rows)));
  assert.ok(record.value.byteLength < wire({ events: expected(rows) }).length / 2, 'less than half the events written out');
});

test('hostile strings in every field are escaped as JSON.stringify would, and stay the same text once expanded', () => {
  const nasty = ['q"uote', 'back\\slash', 'nl\nx', 'nul\u0000x', 'del\u007f', 'lone\ud800', 'pair😀', 'é', '</script>', '\u2028\u2029', ''];
  for (const s of nasty) {
    const rows = [row(s || 'a', s, { deviceId: `d${s}`, uplinkId: `u${s}` }), row(`${s}2`, [s], { deviceId: `d${s}`, uplinkId: `u${s}` })];
    const record = uplinkEventsRecord(rows, [], undefined, 1)!;
    const expanded = expand(record)!;
    assert.is(expanded.source, undefined);
    // A lone surrogate is escaped (\ud800), never written as a replacement character.
    assert.equal(expanded.events, expected(rows), JSON.stringify(s));
  }
});

const envelope = (id: string): UplinkEnvelope => ({ id, channel: 'http', contentType: 'json', deviceId: 'dev1', receivedAt, body: new Uint8Array() });
const letter = (extra: Partial<DeadLetter>): DeadLetter => ({ code: 'PROFILE_VIOLATION', reason: 'not a "number"', rejectedAt: receivedAt + 5, envelope: envelope('up1'), ...extra });

test('refusals follow the states, as written out before: ids, optional asset and item, field order', () => {
  const letters = [letter({ asset: 'h', item: 2 }), letter({ code: 'MALFORMED_PAYLOAD', reason: 'é\n' }), letter({ asset: '' })];
  const events = expand(uplinkEventsRecord([row('t', 1)], letters, { partition: 0, offset: 7 }, 1)!)!.events;
  const refusal = (l: DeadLetter) => ({
    type: 'rejection', id: `up1/rejection/${l.item ?? '-'}/${l.asset ?? '-'}/${l.code}`, deviceId: 'dev1', code: l.code, reason: l.reason,
    rejectedAt: iso(l.rejectedAt), receivedAt: iso(receivedAt), uplinkId: 'up1', ...(l.asset ? { asset: l.asset } : {}), ...(l.item !== undefined ? { item: l.item } : {}),
  });
  assert.is(wire(events), wire([...expected([row('t', 1)]), ...letters.map(refusal)]));
  const whole = expand(uplinkEventsRecord([], [letter({})], undefined, 1)!)!;
  assert.is(whole.source, undefined, 'an uplink refused whole by its edge has no source');
  assert.is(wire(whole.events), wire([refusal(letter({}))]));
});

test('command changes and alarm changes: as written out before', () => {
  const view: CommandView = { id: 'c1', deviceId: 'dev1', kind: 'asset', asset: 'led', value: 1, at: iso(1), issuer: 'u', status: 'failed', code: 'X', reason: 'y', updatedAt: receivedAt, attempts: 2 };
  const command = commandEventRecord(view, 5);
  assert.is(command.key, 'dev1');
  assert.is(wire(expand(command)!.events), wire([{ type: 'command', id: 'c1/failed/2', deviceId: 'dev1', commandId: 'c1', status: 'failed', attempts: 2, changedAt: iso(receivedAt), asset: 'led', code: 'X', reason: 'y' }]));
  const bare = expand(commandEventRecord({ ...view, kind: 'device', asset: undefined, code: undefined, reason: undefined, status: 'queued', attempts: 0 }, 5))!;
  assert.is(wire(bare.events), wire([{ type: 'command', id: 'c1/queued/0', deviceId: 'dev1', commandId: 'c1', status: 'queued', attempts: 0, changedAt: iso(receivedAt) }]));
  const alarm = { id: 'a1', deviceId: 'dev1', ruleId: 'r1', status: 'active', severity: 'major', asset: 't', count: 1, value: 9, lastValue: 9 } as unknown as Alarm;
  const change = alarmEvent(alarm, 'raised', ['i1'], receivedAt);
  assert.equal(expand(alarmEventsRecord([change], 5))!.events, [change]);
  const withStates = expand(uplinkEventsRecord([row('t', 9)], [], { partition: 0, offset: 1 }, 1, [change]))!.events;
  assert.equal(withStates.map((e) => e.type), ['state', 'alarm']);
});

test('a replay of the same uplink gives the same record, so the same ids', () => {
  const rows = [row('t', 1), row('t', 2, { seq: 1 }), row('h', 3, { ts: receivedAt - 1 })];
  const first = uplinkEventsRecord(rows, [letter({ asset: 'x' })], { partition: 1, offset: 9 }, 1)!;
  const again = uplinkEventsRecord(rows.map((r) => ({ ...r })), [letter({ asset: 'x', rejectedAt: receivedAt + 50 })], { partition: 1, offset: 9 }, 2)!;
  assert.equal(expand(again)!.events.map((e) => e.id), expand(first)!.events.map((e) => e.id));
  assert.is(new Set(expand(first)!.events.map((e) => e.id)).size, 4);
});

test('hostile compact records are malformed, never half read', () => {
  const good = { deviceId: 'dev1', uplinkId: 'up1', receivedAt, states: [['t', receivedAt, 1]] };
  assert.ok(expandEventsRecord('dev1', good));
  const bad: unknown[] = [
    null, [], 'x', {},
    { ...good, deviceId: 'dev2' },
    { ...good, uplinkId: '' },
    { ...good, uplinkId: 7 },
    { ...good, receivedAt: 'now' },
    { ...good, receivedAt: 1e300 },
    { ...good, receivedAt: 1.5 },
    { ...good, states: {} },
    { ...good, states: [['t', receivedAt]] },
    { ...good, states: [['t', receivedAt, 1, 1, 1]] },
    { ...good, states: [[7, receivedAt, 1]] },
    { ...good, states: [['t', 9e15, 1]] },
    { ...good, states: [['t', receivedAt, 1, -1]] },
    { ...good, states: ['t'] },
    { ...good, states: [] },
    { ...good, source: { partition: -1, offset: 0 } },
    { ...good, rejections: [{ code: 'X', reason: 'y' }] },
    { ...good, rejections: [{ code: 'X', reason: 'y', rejectedAt: receivedAt, asset: 7 }] },
    { ...good, rejections: [{ code: 'X', reason: 'y', rejectedAt: receivedAt, item: -1 }] },
    { deviceId: 'dev1', rejections: [{ code: 'X', reason: 'y', rejectedAt: receivedAt }] },
    { ...good, alarms: [{ type: 'state', id: 'x', deviceId: 'dev1' }] },
    { ...good, alarms: [{ type: 'alarm', id: 'x', deviceId: 'dev2' }] },
    { deviceId: 'dev1', commands: [{ commandId: 'c', status: 's', attempts: -1, changedAt: 1 }] },
    { deviceId: 'dev1', commands: [{ commandId: 'c', status: 's', attempts: 0, changedAt: 1, reason: 5 }] },
    { deviceId: 'dev1', commands: [{ commandId: '', status: 's', attempts: 0, changedAt: 1 }] },
    { deviceId: 'dev1' },
  ];
  for (const value of bad) assert.is(expandEventsRecord('dev1', value), undefined, JSON.stringify(value));
});

test.run();
