/**
 * The text of topic `events` records (engine/events/eventRecords.ts) is written by hand for speed:
 * it must parse to exactly the events an object serializer would give, whatever the strings hold
 * (quotes, backslashes, control characters, lone surrogates, non-ASCII) and whatever the values are.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { uplinkEventsRecord } from '../../../engine/events/eventRecords.ts';
import type { StateRow } from '../../../schemas/messages.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** What the record must hold for `rows`: built as objects. */
function expected(rows: StateRow[]) {
  return rows.map((row) => ({
    type: 'state', id: `${row.uplinkId}/${row.asset}/${row.ts}/${row.seq ?? 0}`, deviceId: row.deviceId,
    asset: row.asset, value: row.value, at: iso(row.ts), receivedAt: iso(row.receivedAt), uplinkId: row.uplinkId,
  }));
}

const receivedAt = Date.UTC(2026, 10, 28, 12, 0, 0, 123);
const row = (asset: string, value: unknown, extra: Partial<StateRow> = {}): StateRow => ({ deviceId: 'dev1', asset, ts: receivedAt, receivedAt, value: value as StateRow['value'], uplinkId: 'up1', seq: 0, ...extra });

test('plain rows: the same events as objects would give, in order, with the source', () => {
  const rows = [row('t', 21.5), row('h', 40, { ts: receivedAt - 60_000, seq: 1 }), row('on', true), row('mode', 'eco'), row('cfg', { a: [1, null, 'x'] }), row('n', -0), row('big', 1e21), row('tiny', 5e-7)];
  const record = uplinkEventsRecord(rows, [], { partition: 3, offset: 1841 }, 99)!;
  assert.is(record.key, 'dev1');
  assert.is(record.timestamp, 99);
  const parsed = JSON.parse(decoder.decode(record.value));
  assert.equal(parsed, { source: { partition: 3, offset: 1841 }, events: expected(rows).map((e) => ({ ...e, value: JSON.parse(JSON.stringify(e.value)) })) });
});

test('hostile strings in every field are escaped as JSON.stringify would, and stay the same text once decoded', () => {
  const nasty = ['q"uote', 'back\\slash', 'nl\nx', 'nul\u0000x', 'del\u007f', 'lone\ud800', 'pair😀', 'é', '</script>', '\u2028\u2029', ''];
  for (const s of nasty) {
    const rows = [row(s || 'a', s, { deviceId: `d${s}`, uplinkId: `u${s}` }), row(`${s}2`, [s], { deviceId: `d${s}`, uplinkId: `u${s}` })];
    const record = uplinkEventsRecord(rows, [], undefined, 1)!;
    const text = Buffer.from(record.value).toString('utf8');
    const parsed = JSON.parse(text);
    assert.equal(parsed.source, undefined);
    // A lone surrogate is escaped (\ud800), never written as a replacement character.
    assert.equal(parsed.events, expected(rows), JSON.stringify(s));
  }
});

test('rows of several uplinks and devices in one call keep each their own ids', () => {
  const rows = [row('t', 1), row('t', 2, { uplinkId: 'up2', receivedAt: receivedAt + 1, ts: receivedAt + 1 }), row('t', 3, { deviceId: 'dev2' })];
  const parsed = JSON.parse(decoder.decode(uplinkEventsRecord(rows, [], undefined, 1)!.value));
  assert.equal(parsed.events, expected(rows));
});

test.run();
