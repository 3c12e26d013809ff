/**
 * Which events of a record of topic `events` an integration receives (engine/integrations/selectEvents.ts):
 * its types, devices and assets; a refusal or command without an asset passes an asset filter; the
 * ground is the integration's, whatever the record says; hostile records are skipped as malformed.
 * Records of both forms are read: compact (as the engine writes them) and with events written out
 * (as it wrote them before; the topic keeps them 7 days).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { selectEvents, type EventFilter } from '../../../engine/integrations/selectEvents.ts';

const encoder = new TextEncoder();
const all: EventFilter = { groundId: 'g1', events: ['state', 'rejection', 'command'] };
const record = (events: unknown[]) => encoder.encode(JSON.stringify({ events }));
const state = (asset: string, extra: Record<string, unknown> = {}) => ({ type: 'state', id: `s-${asset}`, deviceId: 'd1', asset, value: 1, ...extra });
const rejection = { type: 'rejection', id: 'r1', deviceId: 'd1', code: 'MALFORMED_PAYLOAD', reason: 'x' };
const command = { type: 'command', id: 'c1', deviceId: 'd1', commandId: 'k', status: 'sent', attempts: 1 };

test('types, devices and assets filter; asset-less refusals and commands pass an asset filter', () => {
  const value = record([state('t'), state('h'), rejection, command]);
  assert.equal(selectEvents(all, 'd1', value).events.map((e) => e.id), ['s-t', 's-h', 'r1', 'c1']);
  assert.equal(selectEvents({ ...all, events: ['command'] }, 'd1', value).events.map((e) => e.id), ['c1']);
  assert.equal(selectEvents({ ...all, assets: ['h'] }, 'd1', value).events.map((e) => e.id), ['s-h', 'r1', 'c1']);
  assert.equal(selectEvents({ ...all, devices: ['d2'] }, 'd1', value), { events: [], malformed: false });
  assert.equal(selectEvents({ ...all, devices: ['d1'] }, 'd1', value).events.length, 4);
});

test('the ground is the integration\'s; a groundId written into the record does not count', () => {
  const [event] = selectEvents(all, 'd1', record([state('t', { groundId: 'g-forged' })])).events;
  assert.is(event.groundId, 'g1');
  assert.equal(Object.keys(event).slice(0, 3), ['type', 'id', 'groundId']);
});

test('unicode asset names match exactly: no normalisation, no case folding', () => {
  const value = record([state('te\u0301mp'), state('tÉmp'), state('t\u200bemp')]);
  assert.equal(selectEvents({ ...all, assets: ['témp'] }, 'd1', value).events.map((e) => e.asset), []);
  assert.equal(selectEvents({ ...all, assets: ['te\u0301mp'] }, 'd1', value).events.map((e) => e.asset), ['te\u0301mp']);
});

test('hostile records are malformed, never delivered', () => {
  const bad = [
    encoder.encode('not json'),
    new Uint8Array([0xff, 0xfe, 0x7b]),
    encoder.encode('{"events":[]}'),
    encoder.encode('{"events":{}}'),
    encoder.encode('null'),
    encoder.encode('[1,2]'),
    record([{ type: 'state', deviceId: 'd1' }]),
    record([{ type: 'state', id: '', deviceId: 'd1' }]),
    record([state('t', { deviceId: 'd2' })]),
    record([state('t', { asset: 7 })]),
    record(['x']),
  ];
  for (const value of bad) assert.equal(selectEvents(all, 'd1', value), { events: [], malformed: true }, new TextDecoder().decode(value));
});

test('alarms: to integrations taking alarm events (assets filter them), and to those their rule names whatever they take; the names are not delivered', () => {
  const alarm = { type: 'alarm', id: 'a1/raised/1', deviceId: 'd1', alarmId: 'a1', ruleId: 'r1', change: 'raised', status: 'active', severity: 'major', asset: 't', count: 1, value: 9, lastValue: 9, at: '2026-01-01T00:00:00.000Z', integrations: ['i2'] };
  const value = record([state('t'), alarm]);
  const { integrations: _names, ...delivered } = alarm;
  assert.equal(selectEvents({ ...all, events: ['state', 'alarm'] }, 'd1', value).events, [{ ...state('t'), groundId: 'g1' }, { ...delivered, groundId: 'g1' }]);
  assert.equal(selectEvents({ ...all, events: ['alarm'], assets: ['h'] }, 'd1', value).events, [], 'another asset');
  assert.equal(selectEvents({ ...all, id: 'i2', events: ['rejection'], assets: ['h'] }, 'd1', value).events, [{ ...delivered, groundId: 'g1' }], 'named by the rule');
  assert.equal(selectEvents({ ...all, id: 'i3', events: ['rejection'] }, 'd1', value).events, [], 'not named, not taking alarms');
  const forged = record([{ ...state('t'), integrations: ['i3'] }]);
  assert.equal(selectEvents({ ...all, id: 'i3', events: ['rejection'] }, 'd1', forged).events, [], 'a name on a state routes nothing');
});

test('compact records (as the engine writes them): each event expanded, then filtered as written-out ones', () => {
  const compact = encoder.encode(JSON.stringify({
    source: { partition: 1, offset: 4 }, deviceId: 'd1', uplinkId: 'u1', receivedAt: 1000,
    states: [['t', 1000, 21.5], ['h', 900, 40, 1]], rejections: [{ code: 'PROFILE_VIOLATION', reason: 'x', rejectedAt: 1001, asset: 'h', item: 0 }],
  }));
  const selected = selectEvents(all, 'd1', compact);
  assert.equal(selected.source, { partition: 1, offset: 4 });
  assert.is(JSON.stringify(selected.events), JSON.stringify([
    { type: 'state', id: 'u1/t/1000/0', groundId: 'g1', deviceId: 'd1', asset: 't', value: 21.5, at: '1970-01-01T00:00:01.000Z', receivedAt: '1970-01-01T00:00:01.000Z', uplinkId: 'u1' },
    { type: 'state', id: 'u1/h/900/1', groundId: 'g1', deviceId: 'd1', asset: 'h', value: 40, at: '1970-01-01T00:00:00.900Z', receivedAt: '1970-01-01T00:00:01.000Z', uplinkId: 'u1' },
    { type: 'rejection', id: 'u1/rejection/0/h/PROFILE_VIOLATION', groundId: 'g1', deviceId: 'd1', code: 'PROFILE_VIOLATION', reason: 'x', rejectedAt: '1970-01-01T00:00:01.001Z', receivedAt: '1970-01-01T00:00:01.000Z', uplinkId: 'u1', asset: 'h', item: 0 },
  ]), 'the bytes receivers got when events were written out');
  assert.equal(selectEvents({ ...all, assets: ['h'], events: ['state'] }, 'd1', compact).events.map((e) => e.id), ['u1/h/900/1']);
  assert.equal(selectEvents(all, 'd2', compact), { events: [], malformed: true }, 'another device than its key');
  const command = encoder.encode(JSON.stringify({ deviceId: 'd1', commands: [{ commandId: 'k', status: 'sent', attempts: 1, changedAt: 5 }] }));
  assert.equal(selectEvents({ ...all, assets: ['h'] }, 'd1', command).events, [{ type: 'command', id: 'k/sent/1', groundId: 'g1', deviceId: 'd1', commandId: 'k', status: 'sent', attempts: 1, changedAt: '1970-01-01T00:00:00.005Z' }]);
  assert.equal(selectEvents(all, 'd1', encoder.encode(JSON.stringify({ deviceId: 'd1', states: [['t', 1, 1]] }))), { events: [], malformed: true }, 'states without their uplink');
});

test('a run of uplinks (the local log\'s) is never read whole as the events of its key\'s device: malformed here (its lane reads it uplink by uplink)', () => {
  const uplink = (deviceId: string, offset: number) => ({ source: { partition: 0, offset }, deviceId, uplinkId: `u${offset}`, receivedAt: 1000, states: [['t', 1000, offset]] });
  const run = encoder.encode(JSON.stringify({ uplinks: [uplink('d1', 0), uplink('d-of-another-ground', 1)] }));
  assert.equal(selectEvents(all, 'd1', run), { events: [], malformed: true });
  for (const bad of [{ uplinks: [] }, { uplinks: [uplink('d2', 0)] }, { uplinks: [{ ...uplink('d1', 0), commands: [] }] }, { uplinks: [{ uplinks: [uplink('d1', 0)] }] }, { uplinks: [{ deviceId: 'd1' }] }]) {
    assert.equal(selectEvents(all, 'd1', encoder.encode(JSON.stringify(bad))), { events: [], malformed: true }, JSON.stringify(bad));
  }
});

test('an unknown event type is skipped, the known ones of the record still go', () => {
  const value = record([{ type: 'future', id: 'f1', deviceId: 'd1' }, state('t')]);
  assert.equal(selectEvents(all, 'd1', value), { events: [{ ...state('t'), groundId: 'g1' }], malformed: false });
});

test.run();
