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

test('bounded: past its capacity the oldest record is forgotten', () => {
  const parses = new SharedParses(3);
  const kept = [0, 1, 2].map((offset) => parses.expand(record(0, offset), 'g1'));
  parses.expand(record(0, 3), 'g1');
  assert.is(parses.expand(record(0, 2), 'g1'), kept[2], 'still held');
  assert.is.not(parses.expand(record(0, 0), 'g1'), kept[0], 'forgotten, read again');
  assert.equal(parses.expand(record(0, 0), 'g1')!.events, kept[0]!.events, 'with the same events');
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
