/**
 * Full command queues on the embedded service (local log, chDB, PGlite; `--command-queue` 100).
 * 5,000 commands to an offline device: over HTTP each is either refused at once (429, Retry-After,
 * COMMAND_QUEUE_FULL) or accepted and listed in `GET /device/{id}/commands`; appended to topic
 * `commands` by an application, each is listed, those beyond the queue `failed` with the reason.
 * Command refusals and uplink refusals are listed apart (`/rejections?channel=command`), so a flood
 * of either never pushes the other out.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { logNames } from '../../../app/createService.ts';
import type { Service } from '../../../app/createService.ts';
import { createDeviceOverHttp, startEmbeddedService, type CreatedDevice } from '../../support/embeddedService.ts';
import { issueCommands, listAllCommands } from '../../support/commandListing.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const QUEUE = 100;
const COMMANDS = 5000;
const ASSETS = [
  { name: 'led', is: 'actuator', profile: { type: 'boolean' } },
  { name: 'temp', is: 'sensor', profile: { type: 'number' } },
];

const tmp = tempDir('command-queue');
let service: Service;
let base = '';

type Rejection = { code: string; channel: string; uplinkId: string; asset?: string };

async function rejections(device: CreatedDevice, query = ''): Promise<Rejection[]> {
  const res = await fetch(`${base}/device/${device.id}/rejections${query}`, { headers: { authorization: `Bearer ${device.token}` } });
  assert.is(res.status, 200, `GET rejections${query}`);
  return ((await res.json()) as { items: Rejection[] }).items;
}

/** An uplink the service refuses (a text for a number): one PROFILE_VIOLATION in the device's rejections. */
async function refusedUplink(device: CreatedDevice): Promise<void> {
  const res = await fetch(`${base}/device/${device.id}/state`, {
    method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ temp: { value: 'hot' } }),
  });
  assert.is(res.status, 422);
}

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, commands: { maxQueuePerDevice: QUEUE } }));
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

test('5,000 HTTP commands to an offline device, queue 100: each refused at once (429, Retry-After, COMMAND_QUEUE_FULL) or listed', async () => {
  const device = await createDeviceOverHttp(service, base, ASSETS);
  await refusedUplink(device);
  await waitFor(async () => (await rejections(device)).length === 1, 10_000, 'the uplink refusal recorded');

  const results = await issueCommands({ bases: [base], path: `/device/${device.id}/asset/led/command`, token: device.userToken, count: COMMANDS, body: (i) => ({ value: i % 2 === 0 }) });
  const accepted = results.filter((r) => r.status === 202);
  const refused = results.filter((r) => r.status === 429);
  assert.is(accepted.length + refused.length, COMMANDS, `answers: ${JSON.stringify([...new Set(results.map((r) => r.status))])}`);
  // The device never connects: nothing leaves its queue, so exactly the queue's room is accepted.
  assert.is(accepted.length, QUEUE, `${accepted.length} accepted`);
  for (const r of refused) {
    assert.is(r.code, 'COMMAND_QUEUE_FULL');
    assert.is(r.contentType, 'application/problem+json');
    assert.match(r.retryAfter ?? '', /^[1-9][0-9]*$/);
  }

  // The other command routes are refused the same way while the queue is full.
  const led = (await service.registry.getDevice(device.id))!.assets.find((a) => a.name === 'led')!;
  for (const [path, body] of [[`/device/${device.id}/command`, { led: true }], [`/asset/${led.id}/command`, { value: true }]] as const) {
    const [r] = await issueCommands({ bases: [base], path, token: device.userToken, count: 1, body: () => body });
    assert.equal([r.status, r.code], [429, 'COMMAND_QUEUE_FULL'], path);
    assert.ok(r.retryAfter !== null, `${path}: Retry-After`);
  }

  let listed = new Map<string, { status: string }>();
  await waitFor(async () => {
    listed = await listAllCommands(base, device.id, device.userToken);
    return accepted.every((r) => listed.has(r.id!));
  }, 15_000, 'every accepted command listed');
  assert.is(listed.size, QUEUE, 'nothing refused is listed');
  assert.ok([...listed.values()].every((c) => c.status === 'queued'));

  // The device's uplink refusal is still the list of rejections, alone.
  const after = await rejections(device);
  assert.equal(after.map((r) => [r.code, r.channel]), [['PROFILE_VIOLATION', 'http']]);
  assert.equal(await rejections(device, '?channel=command'), []);
});

test('5,000 commands on topic `commands` for an offline device, queue 100: each listed, those beyond the queue failed with COMMAND_QUEUE_FULL', async () => {
  const device = await createDeviceOverHttp(service, base, ASSETS);
  const topic = logNames(service.config).commands;
  const encoder = new TextEncoder();
  const record = (id: string, fields: Record<string, unknown>) => ({
    key: device.id,
    value: encoder.encode(JSON.stringify({ id, deviceId: device.id, issuer: 'app:test', issuedAt: Date.now(), ...fields })),
  });
  for (let i = 0; i < COMMANDS; i += 500) {
    await service.log.append(topic, Array.from({ length: 500 }, (_, j) => record(`t-${i + j}`, { asset: 'led', value: true })));
  }

  let listed = new Map<string, { status: string; code?: string; reason?: string }>();
  await waitFor(async () => {
    listed = await listAllCommands(base, device.id, device.userToken);
    return listed.size >= COMMANDS;
  }, 30_000, `${COMMANDS} commands listed`).catch((error: Error) => {
    throw new Error(`${error.message}; ${listed.size} listed`);
  });
  assert.is(listed.size, COMMANDS);
  const byStatus = new Map<string, number>();
  for (const c of listed.values()) byStatus.set(`${c.status}:${c.code ?? ''}`, (byStatus.get(`${c.status}:${c.code ?? ''}`) ?? 0) + 1);
  assert.equal(Object.fromEntries(byStatus), { 'queued:': QUEUE, 'failed:COMMAND_QUEUE_FULL': COMMANDS - QUEUE });
  const failed = [...listed.values()].find((c) => c.status === 'failed')!;
  assert.match(failed.reason ?? '', /100 commands waiting/);
  assert.equal(await rejections(device, '?channel=command'), [], 'a full queue is no rejection');
});

test('command refusals and uplink refusals are listed apart: a flood of either leaves the other whole', async () => {
  const device = await createDeviceOverHttp(service, base, ASSETS);
  const topic = logNames(service.config).commands;
  const encoder = new TextEncoder();
  await refusedUplink(device);
  // 150 command records that validation refuses (a command for a sensor).
  await service.log.append(topic, Array.from({ length: 150 }, (_, i) => ({
    key: device.id,
    value: encoder.encode(JSON.stringify({ id: `bad-${i}`, deviceId: device.id, asset: 'temp', value: 1, issuer: 'app:test', issuedAt: Date.now() })),
  })));
  await waitFor(async () => (await rejections(device, '?channel=command&limit=1000')).length === 150, 15_000, '150 command refusals');
  const uplinks = await rejections(device);
  assert.equal(uplinks.map((r) => [r.code, r.channel]), [['PROFILE_VIOLATION', 'http']], 'the uplink refusal is not pushed out');
  const commands = await rejections(device, '?channel=command&limit=1000');
  assert.ok(commands.every((r) => r.code === 'NOT_ACTUATOR' && r.channel === 'command'));
  assert.equal(new Set(commands.map((r) => r.uplinkId)).size, 150);

  for (let i = 0; i < 120; i++) await refusedUplink(device);
  await waitFor(async () => (await rejections(device, '?limit=1000')).length === 121, 15_000, '121 uplink refusals');
  assert.is((await rejections(device, '?channel=command&limit=1000')).length, 150, 'the command refusals are not pushed out');
  assert.is((await rejections(device, '?channel=command')).length, 100, 'the default limit');
  for (const channel of ['http', 'mqtt', 'lpwan']) {
    const only = await rejections(device, `?channel=${channel}&limit=1000`);
    assert.is(only.length, channel === 'http' ? 121 : 0, channel);
  }
  const bad = await fetch(`${base}/device/${device.id}/rejections?channel=carrier-pigeon`, { headers: { authorization: `Bearer ${device.token}` } });
  assert.is(bad.status, 422);
});

test.run();
