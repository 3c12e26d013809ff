/**
 * Redeeming activation codes and managing activations over real HTTP on loopback (spec §2.6,
 * §4.6, §4.7): the device appears in the ground from the option's device type version and network,
 * the code becomes used exactly once (also under 50 racing redemptions), and list / read / change
 * / delete / look up by hardware id follow the lifecycle. Runs once per registry adapter.
 */
import * as assert from 'uvu/assert';
import { ACTIVATION_KEYS, activationBody, activationWorld, assertProblem, LORA, trackerDraft } from '../../support/activationWorld.ts';
import { suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

function activateSuite(factory: RegistryFactory) {
  const test = harnessSuite('http activate', factory);

  test('activate: 201 with the device from the option (hardware id as name, type assets, payload, network) and its token; the code is used', async ({ h }) => {
    const w = await activationWorld(h);
    const eui = w.eui();
    const hw = `00:04:a3:${w.hw('mac')}`;
    const created = (await w.create({
      description: 'blue van',
      hardware: { id: hw },
      options: [
        { description: 'mobile', device: { type: `${w.tracker}:1` }, network: { networkId: 'net8', data: {} } },
        { description: 'TTN', device: { type: w.tracker }, network: { networkId: 'net1', data: { devEui: eui, applicationId: 'fleet' } } },
      ],
    })).json;
    // A newer version is published after the code was made: `:latest` resolves when redeemed.
    const v2Draft = { ...trackerDraft, assets: [...trackerDraft.assets, { name: 'battery', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } }] };
    await h.request('PUT', `/partner/${w.partner.id}/device-types/tracker`, { token: w.partner.token, json: v2Draft });
    await h.request('POST', `/partner/${w.partner.id}/device-types/tracker/versions`, { token: w.partner.token });
    const option = created.options[1];
    const typed = created.code.toLowerCase().replace(/(.{4})(?!$)/g, '$1-');
    const reply = await h.request('POST', '/activate', { token: w.user.token, json: { code: typed, option: option.id, groundId: w.groundId } });
    assert.is(reply.status, 201, reply.text);
    const device = reply.json;
    assert.match(device.token, /^fsd_[0-9A-Za-z]{43}$/);
    assert.is(reply.headers.get('location'), `/device/${device.id}`);
    assert.is(reply.headers.get('cache-control'), 'no-store');
    assert.is(device.groundId, w.groundId);
    assert.is(device.name, hw, 'spec §2.6: the hardware id names the device');
    assert.is(device.description, 'blue van');
    assert.is(device.deviceType, `${w.tracker}:2`);
    assert.equal(device.payload, { format: 'cbor' });
    assert.equal(device.network, { networkId: 'thethingsnetwork', data: { devEui: eui, applicationId: 'fleet', ...LORA } });
    assert.equal(device.assets.map((a: { name: string; is: string }) => [a.name, a.is]), [['battery', 'sensor'], ['buzzer', 'actuator'], ['location', 'sensor'], ['temperature', 'sensor']]);
    assert.equal(device.assets.find((a: { name: string }) => a.name === 'temperature').profile, { type: 'number', minimum: -40, maximum: 85 });
    assert.is(device.assets.find((a: { name: string }) => a.name === 'temperature').title, 'Temperature');
    assert.is((await h.registry.findDeviceByNetwork('thethingsnetwork', eui.toLowerCase()))?.id, device.id, 'resolvable by network + devEui');
    assert.ok(h.changed.includes(device.id));

    const read = await h.request('GET', `/device/${device.id}`, { token: device.token });
    assert.is(read.status, 200, 'the device token works at once');
    assert.not.ok('token' in read.json);
    assert.is((await h.request('GET', `/ground/${w.groundId}/devices`, { token: w.user.token })).json.items.some((d: { id: string }) => d.id === device.id), true);

    const after = (await h.request('GET', `/partner/${w.partner.id}/activations/${created.code}`, { token: w.partner.token })).json;
    assert.equal(Object.keys(after), ACTIVATION_KEYS);
    assert.equal(after, { ...created, status: 'used', activatedDeviceId: device.id, activatedOptionId: option.id });
    assertProblem(await h.request('POST', '/activate', { token: w.user.token, json: { code: created.code, option: option.id, groundId: w.groundId } }), 409, 'CONFLICT', 'body.code');
  });

  test('activate: unknown code 404, foreign option 422, used 409, not a member 403, bad bodies 4xx naming the field; failures leave the code unused', async ({ h }) => {
    const w = await activationWorld(h);
    const a = (await w.create(activationBody(w.tracker, w.hw(), [{ networkId: 'net8', data: {} }]))).json;
    const b = (await w.create(activationBody(w.tracker, w.hw(), [{ networkId: 'net8', data: {} }]))).json;
    const ok = { code: a.code, option: a.options[0].id, groundId: w.groundId };
    const post = (json: unknown, token = w.user.token) => h.request('POST', '/activate', { token, json });
    assertProblem(await post({ ...ok, code: 'ZZZZZZZZZZZZZZZZ' }), 404, 'NOT_FOUND', 'body.code');
    assertProblem(await post({ ...ok, code: 'not a code' }), 404, 'NOT_FOUND', 'body.code');
    assertProblem(await post({ ...ok, option: b.options[0].id }), 422, 'VALIDATION_FAILED', 'body.option');
    assertProblem(await post({ ...ok, option: 'A'.repeat(22) }), 422, 'VALIDATION_FAILED', 'body.option');
    assertProblem(await post(ok, w.stranger.token), 403, 'FORBIDDEN', 'body.groundId');
    assertProblem(await post({ ...ok, groundId: 'A'.repeat(22) }), 403, 'FORBIDDEN', 'body.groundId');
    const bad: Array<[unknown, string]> = [
      [{ option: ok.option, groundId: ok.groundId }, 'body.code'],
      [{ code: ok.code, groundId: ok.groundId }, 'body.option'],
      [{ code: ok.code, option: ok.option }, 'body.groundId'],
      [{ ...ok, code: 5 }, 'body.code'],
      [{ ...ok, code: '' }, 'body.code'],
      [{ ...ok, code: 'x'.repeat(65) }, 'body.code'],
      [{ ...ok, option: 'short' }, 'body.option'],
      [{ ...ok, groundId: "' OR 1=1 --" }, 'body.groundId'],
      [{ ...ok, userId: w.stranger.id }, 'body.userId'],
      ['code', 'body'],
    ];
    for (const [json, path] of bad) assertProblem(await post(json), 422, 'VALIDATION_FAILED', path);
    assertProblem(await h.request('POST', '/activate', { token: w.user.token, body: '{', contentType: 'application/json' }), 400, 'MALFORMED_JSON');
    // A device named like the hardware id is already in the ground: 409, and the code stays unused.
    await h.registry.createDevice({ groundId: w.groundId, name: a.hardware.id });
    assertProblem(await post(ok), 409, 'CONFLICT');
    assert.is((await h.request('GET', `/partner/${w.partner.id}/activations/${a.code}`, { token: w.partner.token })).json.status, 'unused');
    const other = await h.registry.createGround({ name: 'second site', userId: w.user.id });
    assert.is((await post({ ...ok, groundId: other.id })).status, 201);
  });

  test('50 racing redemptions of one code: exactly one device, the others 409', async ({ h }) => {
    const w = await activationWorld(h);
    const a = (await w.create(activationBody(w.tracker, w.hw('race'), [{ networkId: 'net8', data: {} }]))).json;
    // Five grounds, so only the code's lock (not the device name) can keep a second device out.
    const grounds = await Promise.all(Array.from({ length: 5 }, (_, i) => h.registry.createGround({ name: `site ${i}`, userId: w.user.id })));
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      h.request('POST', '/activate', { token: w.user.token, json: { code: a.code, option: a.options[0].id, groundId: grounds[i % 5].id } })));
    const statuses = replies.map((r) => r.status);
    assert.is(statuses.filter((s) => s === 201).length, 1, statuses.join(','));
    for (const r of replies) if (r.status !== 201) assertProblem(r, 409, 'CONFLICT', 'body.code');
    const winner = replies.find((r) => r.status === 201)!.json;
    let devices = 0;
    for (const g of grounds) devices += (await h.registry.listDevices(g.id)).filter((d) => d.name === a.hardware.id).length;
    assert.is(devices, 1);
    const used = (await h.request('GET', `/partner/${w.partner.id}/activations/${a.code}`, { token: w.partner.token })).json;
    assert.is(used.activatedDeviceId, winner.id);
  });

  test('list: filters by status and hardware id, pages with an opaque cursor; bad queries are 422', async ({ h }) => {
    const w = await activationWorld(h);
    const hws = Array.from({ length: 5 }, () => w.hw('list'));
    const made = [];
    for (const hw of hws) made.push((await w.create(activationBody(w.tracker, hw, [{ networkId: 'net8', data: {} }]))).json);
    await h.request('POST', '/activate', { token: w.user.token, json: { code: made[3].code, option: made[3].options[0].id, groundId: w.groundId } });
    const base = `/partner/${w.partner.id}/activations`;
    const get = (query: string) => h.request('GET', `${base}${query}`, { token: w.partner.token });
    const all = (await get('')).json;
    assert.equal(all.items.map((a: { hardware: { id: string } }) => a.hardware.id).sort(), [...hws].sort());
    assert.is(all.next, undefined);
    for (const item of all.items) assert.equal(Object.keys(item), ACTIVATION_KEYS);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = (await get(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)).json;
      seen.push(...page.items.map((a: { code: string }) => a.code));
      cursor = page.next;
      pages++;
    } while (cursor !== undefined);
    assert.is(pages, 3);
    assert.equal(seen, all.items.map((a: { code: string }) => a.code));
    assert.equal((await get('?status=used')).json.items.map((a: { code: string }) => a.code), [made[3].code]);
    assert.is((await get('?status=unused')).json.items.length, 4);
    assert.equal((await get(`?hardwareId=${encodeURIComponent(hws[1])}`)).json.items.map((a: { code: string }) => a.code), [made[1].code]);
    assert.equal((await get(`?hardwareId=${encodeURIComponent(hws[1])}&status=used`)).json.items, []);
    for (const [query, path] of [['?status=lost', 'query.status'], ['?limit=0', 'query.limit'], ['?limit=1001', 'query.limit'], ['?limit=ten', 'query.limit'],
      ['?cursor=bm90LWEtY3Vyc29y', 'query.cursor'], ['?cursor=***', 'query.cursor'], ['?sort=code', 'query.sort'], ['?status=used&status=unused', 'query.status']]) {
      assertProblem(await get(query), 422, 'VALIDATION_FAILED', path);
    }
  });

  test('read, look up by hardware id, change and delete while unused; 409 once used; 404 for unknown codes', async ({ h }) => {
    const w = await activationWorld(h);
    const hw = `AA:BB/${w.hw('odd')} #1`;
    const a = (await w.create(activationBody(w.tracker, hw, [{ networkId: 'net8', data: {} }]))).json;
    const base = `/partner/${w.partner.id}`;
    const t = { token: w.partner.token };
    assert.equal((await h.request('GET', `${base}/activations/${a.code.toLowerCase()}`, t)).json, a, 'codes read in any case');
    assert.equal((await h.request('GET', `${base}/hardware/${encodeURIComponent(hw)}/activation`, t)).json, a);
    assertProblem(await h.request('GET', `${base}/hardware/nothing-here/activation`, t), 404, 'NOT_FOUND');
    assertProblem(await h.request('GET', `${base}/activations/ZZZZZZZZZZZZZZZZ`, t), 404, 'NOT_FOUND');
    assertProblem(await h.request('GET', `${base}/activations/nonsense`, t), 404, 'NOT_FOUND');

    const eui = w.eui();
    const patched = await h.request('PATCH', `${base}/activations/${a.code}`, { ...t, json: {
      description: 'relabelled',
      options: [{ description: 'lora', device: { type: `${w.tracker}:1` }, network: { networkId: 'net2', data: { devEui: eui } } }],
    } });
    assert.is(patched.status, 200, patched.text);
    assert.equal(Object.keys(patched.json), ACTIVATION_KEYS);
    assert.is(patched.json.description, 'relabelled');
    assert.is(patched.json.code, a.code);
    assert.equal(patched.json.hardware, { id: hw });
    assert.is.not(patched.json.options[0].id, a.options[0].id);
    assert.equal(patched.json.options[0].network, { networkId: 'loriot', data: { devEui: eui, ...LORA } });
    const described = await h.request('PATCH', `${base}/activations/${a.code}`, { ...t, json: { description: 'only this' } });
    assert.equal(described.json, { ...patched.json, description: 'only this' });
    for (const [json, path] of [[{}, 'body'], [{ hardware: { id: 'new' } }, 'body.hardware'], [{ options: [] }, 'body.options'],
      [{ options: [{ device: { type: `${w.tracker}` }, network: { networkId: 'net2', data: {} } }] }, 'body.options.0.network.data.devEui'],
      [{ options: [{ device: { type: `${w.partner.id}/ghost` }, network: { networkId: 'net8', data: {} } }] }, 'body.options.0.device.type']] as const) {
      assertProblem(await h.request('PATCH', `${base}/activations/${a.code}`, { ...t, json }), 422, 'VALIDATION_FAILED', path);
    }
    assertProblem(await h.request('PATCH', `${base}/activations/ZZZZZZZZZZZZZZZZ`, { ...t, json: { description: 'x' } }), 404, 'NOT_FOUND', 'path.code');

    await h.request('POST', '/activate', { token: w.user.token, json: { code: a.code, option: patched.json.options[0].id, groundId: w.groundId } });
    assertProblem(await h.request('PATCH', `${base}/activations/${a.code}`, { ...t, json: { description: 'late' } }), 409, 'CONFLICT', 'path.code');
    assertProblem(await h.request('DELETE', `${base}/activations/${a.code}`, t), 409, 'CONFLICT');
    const used = (await h.request('GET', `${base}/hardware/${encodeURIComponent(hw)}/activation`, t)).json;
    assert.is(used.status, 'used', 'troubleshooting: the hardware id shows the device it became');
    assert.match(used.activatedDeviceId, /^[0-9A-Za-z]{22}$/);

    const spare = (await w.create(activationBody(w.tracker, w.hw('spare'), [{ networkId: 'net8', data: {} }]))).json;
    const deleted = await h.request('DELETE', `${base}/activations/${spare.code}`, t);
    assert.is(deleted.status, 204);
    assert.is(deleted.text, '');
    assertProblem(await h.request('GET', `${base}/activations/${spare.code}`, t), 404, 'NOT_FOUND');
    assertProblem(await h.request('DELETE', `${base}/activations/${spare.code}`, t), 404, 'NOT_FOUND');
    assertProblem(await h.request('POST', '/activate', { token: w.user.token, json: { code: spare.code, option: spare.options[0].id, groundId: w.groundId } }), 404, 'NOT_FOUND');
    assert.is((await w.create(activationBody(w.tracker, spare.hardware.id, [{ networkId: 'net8', data: {} }]))).status, 201, 'the hardware id is free again');
  });

  return test;
}

for (const s of suitePerRegistry('http-activate', activateSuite)) s.run();
