/**
 * SharedParses (engine/integrations/SharedParses.ts): a record of topic `events` read by several
 * integrations of a process is parsed once while it is among the latest read, and expanded once
 * for the integrations of a ground; bounded, the oldest forgotten first; a value that is not JSON
 * is known as malformed for every reader.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SharedParses } from '../../../engine/integrations/SharedParses.ts';
import { MALFORMED_RECORD, parseRecord, selectExpanded, selectParsed, selectEvents } from '../../../engine/integrations/selectEvents.ts';
import type { LogRecord } from '../../../engine/ports/log.ts';

const encoder = new TextEncoder();
const record = (partition: number, offset: number, value: string | Uint8Array = JSON.stringify({ deviceId: 'd1', uplinkId: `u${offset}`, receivedAt: 1000, states: [['t', 1000, offset]] })): LogRecord => ({
  topic: 'events', partition, offset, key: 'd1', value: typeof value === 'string' ? encoder.encode(value) : value, timestamp: 1000,
});

test('the same record read again is the same expansion; another partition or offset is another', () => {
  const parses = new SharedParses(10);
  const first = parses.expand(record(0, 5), 'g1');
  assert.is(parses.expand(record(0, 5), 'g1'), first, 'one parse and expansion for both readers');
  assert.is.not(parses.expand(record(1, 5), 'g1'), first);
  assert.is.not(parses.expand(record(0, 6), 'g1'), first);
  assert.equal([parses.hits, parses.misses], [1, 3]);
});

test('bounded by the bytes of the records held: past them the oldest record is forgotten', () => {
  const size = record(0, 0).value.byteLength;
  const parses = new SharedParses(3 * size);
  const kept = [0, 1, 2].map((offset) => parses.expand(record(0, offset), 'g1'));
  assert.is(parses.heldBytes, 3 * size);
  parses.expand(record(0, 3), 'g1');
  assert.is(parses.heldBytes, 3 * size, 'one in, the oldest out');
  assert.is(parses.expand(record(0, 2), 'g1'), kept[2], 'still held');
  assert.is.not(parses.expand(record(0, 0), 'g1'), kept[0], 'forgotten, read again');
  assert.equal(parses.expand(record(0, 0), 'g1')!.events, kept[0]!.events, 'with the same events');
});

test('a run of many uplinks counts by its bytes: it pushes out as many small records as it weighs, and is held alone when larger than the bound', () => {
  const size = record(0, 0).value.byteLength;
  const parses = new SharedParses(4 * size);
  const small = [0, 1, 2, 3].map((offset) => parses.expand(record(0, offset), 'g1'));
  const uplink = (i: number) => ({ deviceId: 'd1', uplinkId: `r${i}`, receivedAt: 1000, states: [['t', 1000, i]] });
  const run = (offset: number, uplinks: number) => record(0, offset, JSON.stringify({ uplinks: Array.from({ length: uplinks }, (_, i) => uplink(i)) }));
  const two = run(10, 1);
  assert.ok(two.value.byteLength > size && two.value.byteLength <= 2 * size, 'a run of one weighs about two small records');
  parses.expand(two, 'g1');
  assert.ok(parses.heldBytes <= 4 * size);
  assert.is.not(parses.expand(record(0, 0), 'g1'), small[0], 'the oldest went');
  const large = run(11, 50);
  const held = parses.expand(large, 'g1');
  assert.ok(held?.parts?.length === 50, 'expanded uplink by uplink');
  assert.is(parses.heldBytes, large.value.byteLength, 'larger than the bound: only it');
  assert.is(parses.expand(large, 'g1'), held, 'and read again from there');
  assert.is.not(parses.expand(record(0, 3), 'g1'), small[3], 'every small one went');
});

test('a value that is not JSON (or not UTF-8) is malformed for every reader, as selectEvents says', () => {
  const parses = new SharedParses();
  for (const bad of ['{"deviceId":', new Uint8Array([0x7b, 0xff, 0x7d])]) {
    assert.is(parseRecord(typeof bad === 'string' ? encoder.encode(bad) : bad), MALFORMED_RECORD);
    assert.is(parses.expand(record(0, 9, bad), 'g1'), undefined);
    assert.is(parses.expand(record(0, 9, bad), 'g1'), undefined, 'read again');
    const filter = { groundId: 'g1', events: ['state' as const] };
    assert.equal(selectExpanded(filter, parses.expand(record(0, 9, bad), 'g1')), selectEvents(filter, 'd1', typeof bad === 'string' ? encoder.encode(bad) : bad));
    assert.ok(selectExpanded(filter, undefined).malformed);
    parses.expand(record(0, 10), 'g1');
  }
});

test('expand: the integrations of one ground share a record\'s events, frozen; another ground gets its own, with its groundId; malformed is undefined', () => {
  const parses = new SharedParses();
  const first = parses.expand(record(0, 1), 'g1')!;
  assert.is(parses.expand(record(0, 1), 'g1'), first, 'one expansion for the ground');
  assert.equal(first.events.map((e) => [e.id, e.groundId, e.value]), [['u1/t/1000/0', 'g1', 1]]);
  assert.ok(Object.isFrozen(first.events[0]) && Object.isFrozen(first.events));
  assert.throws(() => { (first.events[0] as Record<string, unknown>).value = 'changed'; }, TypeError);
  const other = parses.expand(record(0, 1), 'g2')!;
  assert.is(other.events[0].groundId, 'g2');
  assert.is(first.events[0].groundId, 'g1', 'the first ground\'s events untouched');
  assert.equal(selectExpanded({ groundId: 'g1', events: ['state'] }, first), selectParsed({ groundId: 'g1', events: ['state'] }, 'd1', parseRecord(record(0, 1).value)));
  assert.is(parses.expand(record(0, 2, '{"deviceId":'), 'g1'), undefined);
  assert.is(parses.expand(record(0, 3, JSON.stringify({ deviceId: 'someone-else', uplinkId: 'u', receivedAt: 1, states: [['t', 1, 1]] })), 'g1'), undefined, 'not its key\'s device');
  assert.ok(selectExpanded({ groundId: 'g1', events: ['state'] }, undefined).malformed);
});

test.run();
