/**
 * A network message delivered twice is stored once (docs/lpwan.md "Repeated deliveries"), through
 * the LPWAN stack (test/support/lpwanStack.ts) storing into chDB: the second delivery to the same
 * edge gets the first answer back; a delivery to an edge that never saw the message (a second
 * intake, no answer kept) is admitted again under the same uplink id and folds in the store.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { LpwanUplinkIntake } from '../../../engine/lpwan/LpwanUplinkIntake.ts';
import { parseLoriotUplink } from '../../../adapters/lpwan/parseLoriotUplink.ts';
import { parseTtsUplink } from '../../../adapters/lpwan/parseTtsUplink.ts';
import { LpwanStack, requestJson, type Activated } from '../../support/lpwanStack.ts';
import { waitFor } from '../../support/tmp.ts';

const TTS_SECRET = 'replay-tts-secret-000000001';
const LORIOT_SECRET = 'replay-loriot-secret-00000001';
const cayenne = { assets: [{ name: 'temperature_1', is: 'sensor', profile: { type: 'number' } }], payload: { format: 'cayenne' } };
let stack: LpwanStack;
let tts: Activated;
let loriot: Activated;

test.before(async () => {
  stack = await LpwanStack.start({
    store: 'chdb',
    applications: [
      { networkId: 'thethingsnetwork', applicationId: 'replay-app', secret: TTS_SECRET },
      { networkId: 'loriot', applicationId: 'BE7A0042', secret: LORIOT_SECRET },
    ],
  });
  tts = await stack.activate(cayenne, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0004242', applicationId: 'replay-app' } }, 'replay-tts');
  loriot = await stack.activate(cayenne, { networkId: 'loriot', data: { devEui: '0004A30B00424242' } }, 'replay-loriot');
});
test.after(async () => {
  await stack?.close();
});

const states = async (a: Activated) => ((await requestJson(stack.base, 'GET', `/device/${a.deviceId}/asset/temperature_1/states?limit=100`, { token: a.userToken })).json?.items ?? []) as Array<{ value: number; at: string }>;
const cayenneTemp = (celsius: number) => Buffer.from([0x01, 0x67, (celsius * 10) >> 8, (celsius * 10) & 0xff]);

function ttsMessage(fCnt: number, at: number, celsius: number) {
  return {
    end_device_ids: { device_id: 'replay', dev_eui: '70B3D57ED0004242', application_ids: { application_id: 'replay-app' } },
    received_at: new Date(at + 50).toISOString(),
    uplink_message: { f_port: 1, f_cnt: fCnt, frm_payload: cayenneTemp(celsius).toString('base64'), received_at: new Date(at).toISOString() },
  };
}
const loriotMessage = (fcnt: number, ts: number, celsius: number) => ({ cmd: 'rx', EUI: '0004A30B00424242', fcnt, ts, port: 1, data: cayenneTemp(celsius).toString('hex') });

test('the same webhook twice at one edge, and once more at an edge that never saw it: one state each', async () => {
  const at = Date.now() - 10_000;
  const t1 = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsMessage(5, at, 21));
  const t2 = await stack.webhook('thethingsnetwork', TTS_SECRET, ttsMessage(5, at, 21));
  assert.equal(t2.json, { ...(t1.json as object), repeated: true });
  const l1 = await stack.webhook('loriot', LORIOT_SECRET, loriotMessage(5, at, 22));
  const l2 = await stack.webhook('loriot', LORIOT_SECRET, loriotMessage(5, at, 22));
  assert.equal(l2.json, { ...(l1.json as object), repeated: true });

  // Another edge (no answer kept there): admitted again, under the same uplink id.
  const other = new LpwanUplinkIntake({ devices: stack.registry, admission: stack.intake.admission, clock: systemClock, answerTtlMs: 0 });
  const tParsed = parseTtsUplink(ttsMessage(5, at, 21));
  const lParsed = parseLoriotUplink(loriotMessage(5, at, 22));
  assert.ok(tParsed.kind === 'uplink' && lParsed.kind === 'uplink');
  const t3 = await other.accept({ networkId: 'thethingsnetwork', applicationId: 'replay-app' }, tParsed.uplink);
  const l3 = await other.accept({ networkId: 'loriot', applicationId: 'BE7A0042' }, lParsed.uplink);
  assert.equal(t3, t1.json);
  assert.equal(l3, l1.json);
  const appended = (await stack.log.endOffsets('uplinks')).reduce((n, o) => n + o, 0);
  assert.is(appended, 4, 'the first deliveries and the other edge\'s: four appends, two uplink ids');
  // A later frame is another state.
  await stack.webhook('loriot', LORIOT_SECRET, loriotMessage(6, at + 1000, 23));
  await waitFor(async () => (await states(loriot)).length === 2 && (await states(tts)).length === 1, 10_000, 'stored');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await states(tts)).map((s) => s.value), [21]);
  assert.equal((await states(loriot)).map((s) => s.value), [23, 22]);
  assert.equal((await states(tts))[0].at, new Date(at).toISOString(), "timed with the network's receive time");
});

test.run();
