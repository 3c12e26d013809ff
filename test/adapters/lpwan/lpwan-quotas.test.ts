/**
 * The states-per-second quota of a ground on the LPWAN webhooks (docs/grounds.md "Quotas"): an
 * uplink over the rate is answered 202 `dropped` with QUOTA_EXCEEDED and its reason (the network
 * server must not retry it), and listed among the device's rejections.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LpwanStack, type Activated } from '../../support/lpwanStack.ts';
import { waitFor } from '../../support/tmp.ts';

const LORIOT_EUI = '0004A30B001C0999';
const cayenneType = {
  assets: [
    { name: 'temperature_1', is: 'sensor', profile: { type: 'number' } },
    { name: 'digital_in_2', is: 'sensor', profile: { type: 'number' } },
  ],
  payload: { format: 'cayenne' },
};

let frame = 1;
/** Cayenne LPP: two states (temperature_1, digital_in_2), each uplink a frame of its own. */
const loriotUplink = () => ({ cmd: 'rx', EUI: LORIOT_EUI, ts: 1741083630456 + frame, ack: false, fcnt: frame++, port: 5, data: '01670110020001' });

let stack: LpwanStack;
let device: Activated;

test.before(async () => {
  stack = await LpwanStack.start({ applications: [{ networkId: 'loriot', applicationId: 'BE7A0000', secret: 'loriot-quota-secret-0123456789' }] });
  device = await stack.activate(cayenneType, { networkId: 'loriot', data: { devEui: LORIOT_EUI.toLowerCase() } }, 'loriot-quota-1');
  const groundId = (await stack.registry.getDevice(device.deviceId))!.groundId;
  // Two states a second: a burst of four, one uplink of two states every second.
  await stack.registry.setQuota(groundId, { statesPerSecond: 2 });
  await waitFor(() => stack.rates.rates.limits(groundId), 1000, 'the quota applied within a second');
});

test.after(async () => {
  await stack.close();
});

test('over the rate an LPWAN uplink is dropped with QUOTA_EXCEEDED and its reason, and listed among the rejections', async () => {
  const answers: { status: string; code?: string; reason?: string }[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await stack.webhook('loriot', 'loriot-quota-secret-0123456789', loriotUplink());
    assert.is(r.status, 202, r.text);
    answers.push(r.json as { status: string; code?: string; reason?: string });
  }
  const accepted = answers.filter((a) => a.status === 'accepted').length;
  assert.ok(accepted >= 2 && accepted <= 3, `the burst (two uplinks) and at most a refill: ${JSON.stringify(answers)}`);
  const dropped = answers.filter((a) => a.status === 'dropped');
  assert.ok(dropped.length >= 3);
  for (const a of dropped) {
    assert.is(a.code, 'QUOTA_EXCEEDED');
    assert.match(a.reason!, /over its quota of states per second/);
  }
  await waitFor(async () => {
    const items = (await stack.request('GET', `/device/${device.deviceId}/rejections`, { token: device.userToken })).json.items as { code: string }[];
    return items.some((r) => r.code === 'QUOTA_EXCEEDED');
  }, 5000, 'the drop listed among the rejections');
});

test.run();
