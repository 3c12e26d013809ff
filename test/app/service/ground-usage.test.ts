/**
 * GET /ground/{id}/usage on the embedded service: states a device sends and a command a member
 * issues are counted for the ground today and this month (by the engine and the command owner,
 * added to the registry every few seconds), the states it stores are counted in the store with an
 * estimate of their bytes, each beside the ground's quota; another ground's figures stay apart;
 * only an owner reads it (an editor 403 naming the role, a stranger 403, a device token 403).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { tempDir } from '../../support/tmp.ts';

const tmp = tempDir('ground-usage');
let service: Service;
let base = '';

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

const call = async (method: string, path: string, token: string, json?: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
};

test('states and commands counted today and this month, states stored, each beside its quota; owners only', async () => {
  const r = service.registry;
  const owner = await r.createUser({ name: 'owner' });
  const editor = await r.createUser({ name: 'editor' });
  const stranger = await r.createUser({ name: 'stranger' });
  const ground = await r.createGround({ name: 'farm', userId: owner.entity.id });
  const other = await r.createGround({ name: 'elsewhere', userId: stranger.entity.id });
  await r.setMemberRole(ground.id, editor.entity.id, 'editor');
  await r.setQuota(ground.id, { devices: 5, statesPerSecond: 100, retentionDays: 30 });
  const assets = [{ name: 't', is: 'sensor' as const, profile: { type: 'number' } }, { name: 'h', is: 'sensor' as const, profile: { type: 'number' } }, { name: 'light', is: 'actuator' as const, profile: { type: 'boolean' } }];
  const device = await r.createDevice({ groundId: ground.id, name: 'barn', assets });
  const elsewhere = await r.createDevice({ groundId: other.id, name: 'shed', assets });

  const empty = await call('GET', `/ground/${ground.id}/usage`, owner.token);
  assert.is(empty.status, 200);
  assert.equal({ ...empty.body, at: undefined }, {
    groundId: ground.id, at: undefined,
    devices: { count: 1, quota: 5 },
    states: { today: 0, thisMonth: 0, perSecondQuota: 100 },
    commands: { today: 0, thisMonth: 0 },
    stored: { rows: 0, compressedBytes: 0, retentionDays: 30 },
  });

  for (let i = 0; i < 4; i++) {
    const sent = await call('PUT', `/device/${device.device.id}/state`, device.token, { t: { value: 20 + i }, h: { value: 50 + i } });
    assert.is(sent.status, 202);
  }
  assert.is((await call('PUT', `/device/${elsewhere.device.id}/state`, elsewhere.token, { t: { value: 1 } })).status, 202);
  assert.is((await call('POST', `/device/${device.device.id}/asset/light/command`, editor.token, { value: true })).status, 202);

  let usage: any;
  const until = Date.now() + 20_000;
  for (;;) {
    usage = (await call('GET', `/ground/${ground.id}/usage`, owner.token)).body;
    if (usage.states.today === 8 && usage.commands.today === 1 && usage.stored.rows === 8) break;
    if (Date.now() > until) assert.unreachable(`usage not counted within 20 s: ${JSON.stringify(usage)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.equal(usage.states, { today: 8, thisMonth: 8, perSecondQuota: 100 });
  assert.equal(usage.commands, { today: 1, thisMonth: 1 });
  assert.ok(usage.stored.compressedBytes > 0, 'an estimate of the bytes its rows take');
  assert.ok(Math.abs(Date.parse(usage.at) - Date.now()) < 60_000);
  const theirs = (await call('GET', `/ground/${other.id}/usage`, stranger.token)).body;
  assert.equal([theirs.states.today, theirs.commands.today, theirs.stored.rows, theirs.devices], [1, 0, 1, { count: 1, quota: null }]);

  const byEditor = await call('GET', `/ground/${ground.id}/usage`, editor.token);
  assert.equal([byEditor.status, byEditor.body.code, byEditor.body.requiredRole], [403, 'FORBIDDEN', 'owner']);
  assert.is((await call('GET', `/ground/${ground.id}/usage`, stranger.token)).status, 403);
  assert.is((await call('GET', `/ground/${ground.id}/usage`, device.token)).status, 403);
  assert.is((await call('GET', `/ground/not-an-id/usage`, owner.token)).status, 400);
});

test.run();
