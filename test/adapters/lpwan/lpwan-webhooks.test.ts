/**
 * LPWAN uplink webhooks over real HTTP on the embedded stack (device actors included, rows kept in
 * memory): The Things Stack and LORIOT formats, per-application secrets, and every kind of bad
 * input — each answered so the network server never retries what cannot succeed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { encode as cborEncode } from 'cbor-x';
import { decodeDeadLetter } from '../../../engine/uplink/envelope.ts';
import { Topics } from '../../../schemas/messages.ts';
import { LpwanStack, type Activated } from '../../support/lpwanStack.ts';
import { greenhouseSensorType } from '../../support/lpwanDeviceTypes.ts';
import { waitFor } from '../../support/tmp.ts';

const TTS_SECRET = 'tts-webhook-secret-0123456789';
const OTHER_SECRET = 'other-app-secret-abcdefghijkl';
const LORIOT_SECRET = 'loriot-output-secret-987654321';

const TTS_EUI = '70B3D57ED0000001';
const LORIOT_EUI = '0004A30B001C0530';

const cayenneType = {
  assets: [
    { name: 'temperature_1', is: 'sensor', profile: { type: 'number' } },
    { name: 'digital_in_2', is: 'sensor', profile: { type: 'number' } },
  ],
  payload: { format: 'cayenne' },
};

/**
 * Every message these helpers make is a frame of its own (its own frame counter): a message with
 * the counter and network time of an earlier one is the same message delivered again, answered
 * `repeated` and stored once (docs/lpwan.md).
 */
let frame = 100;

/** A The Things Stack uplink as its webhook sends it (JSON format), trimmed to realistic fields. */
function ttsUplink(overrides: { devEui?: string; app?: string; payload?: unknown; fPort?: unknown; receivedAt?: unknown } = {}): Record<string, unknown> {
  const uplink: Record<string, unknown> = {
    session_key_id: 'AYzN2cVq6vE5nKq3pB8z0w==',
    f_port: 'fPort' in overrides ? overrides.fPort : 2,
    f_cnt: frame++,
    frm_payload: 'payload' in overrides ? overrides.payload : Buffer.from([0x08, 0x34, 0x5a]).toString('base64'),
    rx_metadata: [{ gateway_ids: { gateway_id: 'gw-roof', eui: 'B827EBFFFE6C1A2B' }, rssi: -97, channel_rssi: -97, snr: 8.25 }],
    settings: { data_rate: { lora: { bandwidth: 125000, spreading_factor: 7, coding_rate: '4/5' } }, frequency: '868300000' },
    received_at: 'receivedAt' in overrides ? overrides.receivedAt : '2025-03-04T10:20:30.123456789Z',
    consumed_airtime: '0.051456s',
  };
  if (uplink.frm_payload === undefined) delete uplink.frm_payload;
  if (uplink.f_port === undefined) delete uplink.f_port;
  if (uplink.received_at === undefined) delete uplink.received_at;
  return {
    end_device_ids: {
      device_id: `eui-${(overrides.devEui ?? TTS_EUI).toLowerCase()}`,
      application_ids: { application_id: overrides.app ?? 'fleet-app' },
      dev_eui: overrides.devEui ?? TTS_EUI,
      join_eui: '0000000000000000',
      dev_addr: '260B1234',
    },
    correlation_ids: ['as:up:01HQ8Z6D3F0Q2S1W7R5T4Y9X8V'],
    received_at: '2025-03-04T10:20:30.200Z',
    uplink_message: uplink,
  };
}

function loriotUplink(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  // Cayenne LPP: temperature_1 = 27.2 °C, digital_in_2 = 1
  return { cmd: 'rx', EUI: LORIOT_EUI, ts: 1741083630456, ack: false, bat: 255, fcnt: frame++, port: 5, freq: 868100000, dr: 'SF7 BW125 4/5', data: '01670110020001', ...overrides };
}

let stack: LpwanStack;
let tts: Activated;
let loriot: Activated;

test.before(async () => {
  stack = await LpwanStack.start({
    maxBodyBytes: 4096,
    applications: [
      { networkId: 'thethingsnetwork', applicationId: 'fleet-app', secret: TTS_SECRET },
      { networkId: 'thethingsnetwork', applicationId: 'other-app', secret: OTHER_SECRET },
      { networkId: 'loriot', applicationId: 'BE7A0000', secretSha256: createHash('sha256').update(LORIOT_SECRET).digest('hex') },
    ],
  });
  tts = await stack.activate(greenhouseSensorType, { networkId: 'net1', data: { devEui: '70-B3-D5-7E-D0-00-00-01', applicationId: 'fleet-app' } }, 'tts-unit-1');
  loriot = await stack.activate(cayenneType, { networkId: 'loriot', data: { devEui: LORIOT_EUI.toLowerCase() } }, 'loriot-unit-1');
});

test.after(async () => {
  await stack.close();
});

const rowsOf = (deviceId: string) => stack.rows.filter((r) => r.deviceId === deviceId);
const rejectionsOf = async (device: Activated) => (await stack.request('GET', `/device/${device.deviceId}/rejections`, { token: device.userToken })).json.items as { code: string; reason: string; uplinkId: string }[];

test('a The Things Stack uplink is decoded by the device type script and timed by the network', async () => {
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink());
  assert.is(r.status, 202, r.text);
  assert.is(r.json.status, 'accepted');
  assert.is(r.json.deviceId, tts.deviceId);
  await waitFor(() => rowsOf(tts.deviceId).length === 2, 10_000, 'two states');
  const rows = rowsOf(tts.deviceId).sort((a, b) => a.asset.localeCompare(b.asset));
  assert.equal(rows.map((x) => [x.asset, x.value]), [['humidity', 45], ['temperature', 21]]);
  // uplink_message.received_at (Network Server time), fractions beyond ms truncated
  assert.ok(rows.every((x) => x.ts === Date.UTC(2025, 2, 4, 10, 20, 30, 123)));
  assert.ok(rows.every((x) => x.uplinkId === r.json.uplinkId));
});

test('a CBOR batch over LPWAN: readings without at all kept at the network time, in item order; an asset repeated at one at refused DUPLICATE_READING', async () => {
  const eui = '70B3D57ED00000C1';
  const device = await stack.activate({ assets: [{ name: 'level', is: 'sensor', profile: { type: 'number' } }] },
    { networkId: 'thethingsnetwork', data: { devEui: eui, applicationId: 'fleet-app' } }, 'cbor-unit-1');
  const at = '2025-03-04T10:00:00Z';
  const payload = cborEncode([{ level: 1 }, { level: 2 }, { level: { value: 3, at } }, { level: { value: 4, at } }, { level: 5 }]);
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ devEui: eui, payload: Buffer.from(payload).toString('base64') }));
  assert.equal([r.status, r.json.status], [202, 'accepted'], r.text);
  await waitFor(() => rowsOf(device.deviceId).length === 4, 10_000, 'four states');
  const network = Date.UTC(2025, 2, 4, 10, 20, 30, 123);
  assert.equal(rowsOf(device.deviceId).map((x) => [x.value, x.ts, x.seq ?? 0, x.uplinkId]), [
    [1, network, 0, r.json.uplinkId], [2, network, 1, r.json.uplinkId], [3, Date.parse(at), 0, r.json.uplinkId], [5, network, 2, r.json.uplinkId],
  ]);
  await waitFor(async () => (await rejectionsOf(device)).length === 1, 10_000, 'the duplicate recorded');
  const [rejection] = await rejectionsOf(device);
  assert.equal([rejection.code, rejection.uplinkId], ['DUPLICATE_READING', r.json.uplinkId]);
  assert.match(rejection.reason, /^item 3: item 2 already holds a reading of asset "level"/);
});

test('the bare secret (no Bearer) is accepted, as some outputs send the header value as typed', async () => {
  const r = await stack.request('POST', '/lpwan/thethingsnetwork/uplink', { headers: { authorization: TTS_SECRET }, body: JSON.stringify(ttsUplink()) });
  assert.is(r.status, 202, r.text);
  assert.is(r.json.status, 'accepted');
});

test('a LORIOT uplink (cmd rx, hex data) is decoded as Cayenne LPP and timed by ts', async () => {
  const r = await stack.webhook('loriot', LORIOT_SECRET, loriotUplink());
  assert.is(r.status, 202, r.text);
  assert.is(r.json.status, 'accepted');
  await waitFor(() => rowsOf(loriot.deviceId).length === 2, 10_000, 'two states');
  const rows = rowsOf(loriot.deviceId).sort((a, b) => a.asset.localeCompare(b.asset));
  assert.equal(rows.map((x) => [x.asset, x.value, x.ts]), [['digital_in_2', 1, 1741083630456], ['temperature_1', 27.2, 1741083630456]]);
});

test('missing, wrong and other-network secrets are 401 problems', async () => {
  for (const [network, secret] of [
    ['thethingsnetwork', undefined], ['thethingsnetwork', 'not-the-secret-at-all-000'], ['thethingsnetwork', LORIOT_SECRET],
    ['loriot', undefined], ['loriot', TTS_SECRET], ['loriot', ''],
  ] as const) {
    const r = await stack.webhook(network, secret, network === 'loriot' ? loriotUplink() : ttsUplink());
    assert.is(r.status, 401, `${network} ${secret}`);
    assert.is(r.json.code, 'UNAUTHORIZED');
    assert.is(r.headers.get('content-type'), 'application/problem+json');
  }
  const scheme = await stack.request('POST', '/lpwan/thethingsnetwork/uplink', { headers: { authorization: `Basic ${TTS_SECRET}` }, body: JSON.stringify(ttsUplink()) });
  assert.is(scheme.status, 401);
});

test('a message of another application under this application\'s secret is 403', async () => {
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ app: 'other-app' }));
  assert.is(r.status, 403);
  assert.is(r.json.code, 'FORBIDDEN');
});

test('an unknown devEui is answered 202 dropped UNKNOWN_DEVICE, recorded as a dead letter, and stores nothing', async () => {
  const before = stack.rows.length;
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ devEui: '70B3D57ED00000FF' }));
  assert.is(r.status, 202, r.text);
  assert.equal({ status: r.json.status, code: r.json.code }, { status: 'dropped', code: 'UNKNOWN_DEVICE' });
  assert.match(r.json.reason, /70B3D57ED00000FF/);
  const l = await stack.webhook('loriot', LORIOT_SECRET, loriotUplink({ EUI: '00000000000000AA' }));
  assert.equal({ status: l.json.status, code: l.json.code }, { status: 'dropped', code: 'UNKNOWN_DEVICE' });
  // The dead letters are durable on the topic (device id "": no device to list them under).
  const letters = [];
  for await (const record of readTopic(Topics.deadLetters)) letters.push(decodeDeadLetter(record));
  const unknown = letters.filter((d) => d.code === 'UNKNOWN_DEVICE');
  assert.equal(unknown.map((d) => [d.envelope.deviceId, d.envelope.network?.networkId, d.envelope.network?.devEui]).sort(), [
    ['', 'loriot', '00000000000000AA'], ['', 'thethingsnetwork', '70B3D57ED00000FF'],
  ]);
  assert.equal([...unknown.find((d) => d.envelope.network?.networkId === 'thethingsnetwork')!.envelope.body], [0x08, 0x34, 0x5a]);
  assert.is(stack.rows.length, before);
});

test('a devEui bound in another The Things Stack application is dropped as unknown there', async () => {
  const r = await stack.webhook('thethingsnetwork', OTHER_SECRET, ttsUplink({ app: 'other-app' }));
  assert.is(r.status, 202);
  assert.equal({ status: r.json.status, code: r.json.code }, { status: 'dropped', code: 'UNKNOWN_DEVICE' });
  assert.match(r.json.reason, /bound in thethingsnetwork application fleet-app/);
});

test('malformed JSON and bodies that are not messages of the network server are 400', async () => {
  const cases: [string, string, string | unknown, string][] = [
    ['thethingsnetwork', TTS_SECRET, '{"end_device_ids": ', 'MALFORMED_JSON'],
    ['thethingsnetwork', TTS_SECRET, '', 'MALFORMED_JSON'],
    ['thethingsnetwork', TTS_SECRET, Buffer.from([0xff, 0xfe, 0x7b]).toString('latin1'), 'MALFORMED_JSON'],
    ['thethingsnetwork', TTS_SECRET, [1, 2, 3], 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, { hello: 'world' }, 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, { ...ttsUplink(), uplink_message: 'x' }, 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, ttsUplink({ devEui: 'not-an-eui' }), 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, ttsUplink({ fPort: '2' }), 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, ttsUplink({ fPort: 0 }), 'BAD_REQUEST'],
    ['thethingsnetwork', TTS_SECRET, ttsUplink({ receivedAt: 'yesterday' }), 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, 'null', 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, { EUI: LORIOT_EUI, data: '00' }, 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, loriotUplink({ EUI: 12 }), 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, loriotUplink({ port: 300 }), 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, loriotUplink({ ts: '1741083630456' }), 'BAD_REQUEST'],
    ['loriot', LORIOT_SECRET, loriotUplink({ ts: -5 }), 'BAD_REQUEST'],
  ];
  for (const [network, secret, body, code] of cases) {
    const r = await stack.webhook(network as 'loriot', secret, body);
    assert.is(r.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${r.text}`);
    assert.is(r.json.code, code, JSON.stringify(body).slice(0, 80));
  }
});

test('a payload field that is not valid base64 or hex is dropped MALFORMED_PAYLOAD and listed in the device\'s rejections', async () => {
  for (const payload of ['AQI', '!!!!', 'AQID\n', 42]) {
    const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ payload }));
    assert.is(r.status, 202, r.text);
    assert.equal({ status: r.json.status, code: r.json.code, deviceId: r.json.deviceId }, { status: 'dropped', code: 'MALFORMED_PAYLOAD', deviceId: tts.deviceId });
  }
  const odd = await stack.webhook('loriot', LORIOT_SECRET, loriotUplink({ data: '016' }));
  assert.equal({ status: odd.json.status, code: odd.json.code }, { status: 'dropped', code: 'MALFORMED_PAYLOAD' });
  const encrypted = await stack.webhook('loriot', LORIOT_SECRET, loriotUplink({ data: undefined, encdata: '9f1c0a' }));
  assert.equal({ status: encrypted.json.status, code: encrypted.json.code }, { status: 'dropped', code: 'MALFORMED_PAYLOAD' });
  assert.match(encrypted.json.reason, /AppSKey/);
  await waitFor(async () => (await rejectionsOf(tts)).filter((x) => x.code === 'MALFORMED_PAYLOAD').length === 4, 10_000, 'four TTS rejections');
  const listed = await rejectionsOf(loriot);
  assert.is(listed.filter((x) => x.code === 'MALFORMED_PAYLOAD').length, 2);
  assert.ok(listed.some((x) => /AppSKey/.test(x.reason)));
});

test('a payload the device type cannot decode is dropped at the webhook as DECODE_FAILED (202, so the network does not retry) and listed', async () => {
  const before = rowsOf(tts.deviceId).length;
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ payload: Buffer.from([0x01]).toString('base64') }));
  assert.is(r.status, 202);
  assert.equal([r.json.status, r.json.code, r.json.deviceId], ['dropped', 'DECODE_FAILED', tts.deviceId]);
  assert.match(r.json.reason, /needs 2 bytes, the payload has 1/);
  await waitFor(async () => (await rejectionsOf(tts)).some((x) => x.uplinkId === r.json.uplinkId), 10_000, 'DECODE_FAILED rejection');
  const rejection = (await rejectionsOf(tts)).find((x) => x.uplinkId === r.json.uplinkId)!;
  assert.is(rejection.code, 'DECODE_FAILED');
  assert.match(rejection.reason, /needs 2 bytes, the payload has 1/);
  const bad = await stack.webhook('loriot', LORIOT_SECRET, loriotUplink({ data: '01ff00' }));
  assert.equal([bad.json.status, bad.json.code], ['dropped', 'DECODE_FAILED']);
  await waitFor(async () => (await rejectionsOf(loriot)).some((x) => x.uplinkId === bad.json.uplinkId && x.code === 'DECODE_FAILED'), 10_000, 'Cayenne DECODE_FAILED');
  assert.is(rowsOf(tts.deviceId).length, before);
});

test('an empty frm_payload (omitted by The Things Stack) reaches the decoder as zero bytes', async () => {
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsUplink({ payload: undefined }));
  assert.equal([r.json.status, r.json.code], ['dropped', 'DECODE_FAILED']);
  await waitFor(async () => (await rejectionsOf(tts)).some((x) => x.uplinkId === r.json.uplinkId && /has 0/.test(x.reason)), 10_000, 'rejection of an empty payload');
});

test('other message types are acknowledged and ignored', async () => {
  const join = await stack.webhook('thethingsnetwork', TTS_SECRET, { end_device_ids: ttsUplink().end_device_ids, join_accept: { session_key_id: 'AYzN', received_at: '2025-03-04T10:00:00Z' } });
  assert.is(join.status, 202);
  assert.equal(join.json, { status: 'ignored', reason: 'join_accept is not an uplink' });
  for (const body of [loriotUplink({ cmd: 'gw', gws: [] }), loriotUplink({ cmd: 'txd' }), loriotUplink({ port: 0 })]) {
    const r = await stack.webhook('loriot', LORIOT_SECRET, body);
    assert.is(r.status, 202);
    assert.is(r.json.status, 'ignored');
  }
});

test('a body over the edge limit is 413, declared or streamed', async () => {
  const big = ttsUplink();
  (big.uplink_message as Record<string, unknown>).rx_metadata = Array.from({ length: 200 }, (_, i) => ({ gateway_ids: { gateway_id: `gw-${i}` }, rssi: -100 }));
  const r = await stack.webhook('thethingsnetwork', TTS_SECRET, big);
  assert.is(r.status, 413);
  assert.is(r.json.code, 'PAYLOAD_TOO_LARGE');
  const body = new TextEncoder().encode(JSON.stringify(big));
  const streamed = await fetch(`${stack.base}/lpwan/loriot/uplink`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LORIOT_SECRET}`, 'content-type': 'application/json' },
    body: new ReadableStream({ start(c) { c.enqueue(body); c.close(); } }),
    duplex: 'half',
  } as RequestInit);
  assert.is(streamed.status, 413);
});

test('the webhooks are in the OpenAPI document', async () => {
  const doc = (await stack.request('GET', '/openapi.json')).json;
  assert.ok(doc.paths['/lpwan/thethingsnetwork/uplink'].post);
  assert.ok(doc.paths['/lpwan/loriot/uplink'].post.responses['202']);
});

/** Every record of a topic, all partitions, from the start. */
async function* readTopic(topic: string): AsyncGenerator<Uint8Array> {
  await stack.intake.deadLetters.flush();
  const records: Uint8Array[] = [];
  const consumer = stack.log.consumer({
    group: `read-${Math.random().toString(36).slice(2)}`,
    topics: [topic],
    onBatch: async (batch) => { for (const r of batch.records) records.push(r.value); },
  });
  await consumer.start();
  await waitFor(() => records.length > 0, 5000, `records on ${topic}`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await consumer.stop();
  yield* records;
}

test.run();
