/**
 * The `at` window of admission (engine/uplink/admission/compileDevice.ts AtWindow): a measurement
 * time more than `maxAheadMs` ahead of the receive time, or before `minAt`, is INVALID_AT with a
 * reason; so is an LPWAN network's receive time where it stands in for a missing `at`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode } from 'cbor-x';
import { compileDevice, DEFAULT_AT_WINDOW } from '../../../engine/uplink/admission/compileDevice.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { admitUplink } from '../../../engine/uplink/admission/admitUplink.ts';
import { RECEIVED_AT, codes, envelope, run, testDevice, testDeviceInfo } from '../../support/uplink.ts';

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const asset = (at: unknown, device = testDevice()) => run(envelope(JSON.stringify({ value: 1, at }), 'json', { asset: 'humidity' }), device);

test('default: up to a day ahead of the receive time is accepted, a millisecond more is refused', () => {
  assert.equal(DEFAULT_AT_WINDOW, { maxAheadMs: DAY, minAt: 0 });
  assert.is(asset(iso(RECEIVED_AT + DAY)).rows[0].ts, RECEIVED_AT + DAY);
  const out = asset(iso(RECEIVED_AT + DAY + 1));
  assert.equal(codes(out), [['INVALID_AT', 'humidity']]);
  assert.match(out.rejections[0].reason, /is more than 86400000 ms ahead of the receive time 2030-01-01T00:00:00.000Z/);
  assert.equal(codes(asset('2999-01-01T00:00:00Z')), [['INVALID_AT', 'humidity']]);
});

test('default: not before 1970; 1970-01-01T00:00:00Z itself is accepted', () => {
  assert.is(asset('1970-01-01T00:00:00Z').rows[0].ts, 0);
  const out = asset('1969-12-31T23:59:59.999Z');
  assert.equal(codes(out), [['INVALID_AT', 'humidity']]);
  assert.match(out.rejections[0].reason, /before 1970-01-01T00:00:00.000Z, the earliest measurement time accepted/);
  assert.equal(codes(asset('0001-01-01T00:00:00Z')), [['INVALID_AT', 'humidity']]);
});

test('a configured window: one minute ahead, nothing before 2020', () => {
  const device = compileDevice(testDeviceInfo, { atWindow: { maxAheadMs: 60_000, minAt: Date.UTC(2020, 0, 1) } });
  assert.equal(codes(asset(iso(RECEIVED_AT + 60_001), device)), [['INVALID_AT', 'humidity']]);
  assert.is(asset(iso(RECEIVED_AT + 60_000), device).rows.length, 1);
  assert.equal(codes(asset('2019-12-31T23:59:59Z', device)), [['INVALID_AT', 'humidity']]);
});

test('every form: device states, CBOR tag 1 and batches are held to the window one entry at a time', () => {
  const far = iso(RECEIVED_AT + 2 * DAY);
  const device = run(envelope(JSON.stringify({ humidity: { value: 1, at: far }, temperature: { value: 2 } }), 'json'));
  assert.equal(codes(device), [['INVALID_AT', 'humidity']]);
  assert.equal(device.rows.map((r) => r.asset), ['temperature']);
  const cbor = run(envelope(hex('a1 64646f6f72 a2 6576616c7565 f5 626174 c1 1b00000002540be400'), 'cbor')); // tag 1: 10^10 s = 2286
  assert.equal(codes(cbor), [['INVALID_AT', 'door']]);
  const batch = run(envelope(JSON.stringify([{ humidity: { value: 1, at: far } }, { humidity: { value: 2 } }]), 'json'));
  assert.equal(batch.rejections.map((r) => [r.item, r.code]), [[0, 'INVALID_AT']]);
  assert.is(batch.rows.length, 1);
});

test("an LPWAN network's receive time standing in for a missing at is held to the window too", () => {
  const body = new Uint8Array(encode({ humidity: 5 }));
  const ahead = run(envelope(body, 'cbor', { channel: 'lpwan', network: { networkId: 'loriot', devEui: '0011223344556677', receivedAt: RECEIVED_AT + 2 * DAY } }));
  assert.equal(codes(ahead), [['INVALID_AT', 'humidity']]);
  assert.match(ahead.rejections[0].reason, /the receive time the network reported \(.*\), which stands in for a missing at, is more than/);
  const ok = run(envelope(body, 'cbor', { channel: 'lpwan', network: { networkId: 'loriot', devEui: '0011223344556677', receivedAt: RECEIVED_AT - 1000 } }));
  assert.equal(ok.rows.map((r) => r.ts), [RECEIVED_AT - 1000]);
  // The whole uplink is refused when no entry yields a state.
  const refused = admitUplink(envelope(body, 'cbor', { channel: 'lpwan', network: { networkId: 'loriot', devEui: '0011223344556677', receivedAt: -5 } }), testDevice());
  assert.is(refused.verdict, 'refused');
});

test('configuration: --at-max-ahead-ms / AT_MAX_AHEAD_MS and --at-min-ms / AT_MIN_MS, flags winning; negative refused', () => {
  assert.equal(loadConfig({}, {}).uplinks, { atMaxAheadMs: DAY, atMinMs: 0 });
  assert.equal(loadConfig({}, { AT_MAX_AHEAD_MS: '60000', AT_MIN_MS: '1577836800000' }).uplinks, { atMaxAheadMs: 60_000, atMinMs: 1_577_836_800_000 });
  assert.equal(loadConfig({ 'at-max-ahead-ms': '5' }, { AT_MAX_AHEAD_MS: '60000' }).uplinks.atMaxAheadMs, 5);
  assert.throws(() => loadConfig({ 'at-max-ahead-ms': '-1' }, {}), /invalid configuration/);
  assert.throws(() => loadConfig({ 'at-min-ms': '-1' }, {}), /invalid configuration/);
});

function hex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s.replace(/\s/g, ''), 'hex'));
}

test.run();
