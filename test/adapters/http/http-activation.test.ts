/**
 * The activation edge over real HTTP on loopback (spec §2.5–2.8, §4.5, §9): device types, the 201
 * of creating an activation, the networks table, version suffixes, bad input and one code per
 * hardware id under races. Runs once per registry adapter (PGlite; PostgreSQL when
 * DATABASE_URL_TEST is set).
 */
import * as assert from 'uvu/assert';
import {
  ACTIVATION_KEYS, activationBody, activationWorld, assertProblem, CODE_RE, ID_RE, LORA, OPTION_KEYS, trackerDraft,
} from '../../support/activationWorld.ts';
import { suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

function activationSuite(factory: RegistryFactory) {
  const test = harnessSuite('http activation', factory);

  test('device types: PUT creates then replaces the draft, POST …/versions publishes 1, 2, …, GET lists them', async ({ h }) => {
    const w = await activationWorld(h);
    const base = `/partner/${w.partner.id}/device-types`;
    const created = await h.request('PUT', `${base}/meter`, { token: w.partner.token, json: { assets: [{ name: 'energy', is: 'sensor', profile: { type: 'number' } }] } });
    assert.is(created.status, 201, created.text);
    assert.is(created.headers.get('location'), `${base}/meter`);
    assert.equal(created.json.versions, []);
    assert.is(created.json.latest, null);
    assert.is(created.json.ref, `${w.partner.id}/meter`);
    const v1 = await h.request('POST', `${base}/meter/versions`, { token: w.partner.token });
    assert.is(v1.status, 201, v1.text);
    assert.is(v1.json.version, 1);
    assert.is(v1.json.ref, `${w.partner.id}/meter:1`);
    assert.is(v1.headers.get('location'), `${base}/meter/versions/1`);
    const draft2 = { title: 'Meter', assets: [{ name: 'energy', is: 'sensor', profile: { type: 'integer' } }], payload: { format: 'cayenne' } };
    const replaced = await h.request('PUT', `${base}/meter`, { token: w.partner.token, json: draft2 });
    assert.is(replaced.status, 200, replaced.text);
    assert.equal(replaced.json.draft, draft2);
    assert.equal(replaced.json.versions.map((v: { version: number }) => v.version), [1]);
    const v2 = await h.request('POST', `${base}/meter/versions`, { token: w.partner.token });
    assert.is(v2.json.version, 2);
    assert.equal(v2.json.definition, draft2);
    assert.equal((await h.request('GET', `${base}/meter/versions/1`, { token: w.partner.token })).json.definition.assets[0].profile, { type: 'number' }, 'version 1 never changed');
    assert.is((await h.request('GET', `${base}/meter/versions/latest`, { token: w.partner.token })).json.version, 2);
    assertProblem(await h.request('GET', `${base}/meter/versions/3`, { token: w.partner.token }), 404, 'NOT_FOUND');
    assertProblem(await h.request('GET', `${base}/meter/versions/0`, { token: w.partner.token }), 400, 'BAD_REQUEST');
    const one = await h.request('GET', `${base}/meter`, { token: w.partner.token });
    assert.is(one.status, 200);
    assert.is(one.json.latest, 2);
    const list = await h.request('GET', base, { token: w.partner.token });
    assert.equal(list.json.map((t: { name: string; latest: number }) => [t.name, t.latest]), [['meter', 2], ['tracker', 1]]);
    assertProblem(await h.request('GET', `${base}/nothing`, { token: w.partner.token }), 404, 'NOT_FOUND');
    assertProblem(await h.request('POST', `${base}/nothing/versions`, { token: w.partner.token }), 404, 'NOT_FOUND');
    assertProblem(await h.request('PUT', `${base}/bad%2Fname`, { token: w.partner.token, json: { assets: [] } }), 400, 'BAD_REQUEST');
  });

  test('device types: bad drafts are 4xx problems naming the field; the draft is unchanged', async ({ h }) => {
    const w = await activationWorld(h);
    const path = `/partner/${w.partner.id}/device-types/tracker`;
    const put = (json: unknown) => h.request('PUT', path, { token: w.partner.token, json });
    const bad: Array<[unknown, string]> = [
      [{}, 'body.assets'],
      [{ assets: [{ name: 'x', is: 'sensor' }] }, 'body.assets.0.profile'],
      [{ assets: [{ name: 'x', is: 'sensor', profile: { type: 'float' } }] }, 'body.assets.0.profile'],
      [{ assets: [{ name: 'a b', is: 'sensor', profile: {} }] }, 'body.assets.0.name'],
      [{ assets: [{ name: 'x', is: 'gauge', profile: {} }] }, 'body.assets.0.is'],
      [{ assets: [{ name: 'x', is: 'sensor', profile: {} }, { name: 'x', is: 'sensor', profile: {} }] }, 'body.assets'],
      [{ assets: [], payload: { format: 'xml' } }, 'body.payload.format'],
      [{ assets: [], payload: { format: 'binary' } }, 'body.payload.conversion'],
      [{ assets: [], payload: { format: 'json', conversion: { sense: [] } } }, 'body.payload.conversion'],
      [{ assets: [], payload: { format: 'binary', conversion: { sense: [{ asset: 't', value: { byte: -1 } }] } } }, 'body.payload.conversion.sense[0].value.byte'],
      [{ assets: [], colour: 'red' }, 'body.colour'],
      [{ assets: [], title: 'x'.repeat(257) }, 'body.title'],
      [{ assets: [], description: 'x'.repeat(4097) }, 'body.description'],
      [{ assets: 'none' }, 'body.assets'],
      [[], 'body'],
    ];
    for (const [json, field] of bad) assertProblem(await put(json), 422, 'VALIDATION_FAILED', field);
    assertProblem(await h.request('PUT', path, { token: w.partner.token, body: '{"assets": [', contentType: 'application/json' }), 400, 'MALFORMED_JSON');
    assertProblem(await h.request('PUT', path, { token: w.partner.token, body: '{}', contentType: 'text/plain' }), 415, 'UNSUPPORTED_CONTENT_TYPE');
    const binary = { assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }], payload: { format: 'binary', conversion: { sense: [{ asset: 't', value: { byte: 0, bytelength: 2, signed: true, calculation: 'val / 10' } }] } } };
    assert.is((await h.request('PUT', `/partner/${w.partner.id}/device-types/binary`, { token: w.partner.token, json: binary })).status, 201, 'a checked conversion script is accepted');
    assert.equal((await h.request('GET', path, { token: w.partner.token })).json.draft, trackerDraft);
  });

  test('create: 201 with exactly the fields of spec §2.5, a typeable code, generated option ids and version suffixes', async ({ h }) => {
    const w = await activationWorld(h);
    const hw = w.hw('mac');
    const body = {
      description: 'Tracker for the blue van',
      hardware: { id: hw },
      options: [
        { description: 'TTN', device: { type: w.tracker }, network: { networkId: 'net1', data: { devEui: w.eui(), applicationId: 'fleet-app' } } },
        { description: 'pinned', device: { type: `${w.tracker}:1` }, network: { networkId: 'net8', data: {} } },
        { description: '', device: { type: `${w.tracker}:latest` }, network: { networkId: 'orangebe' } },
      ],
    };
    const reply = await w.create(body);
    assert.is(reply.status, 201, reply.text);
    assert.is(reply.headers.get('content-type'), 'application/json');
    const a = reply.json;
    assert.equal(Object.keys(a), ACTIVATION_KEYS);
    assert.match(a.code, CODE_RE);
    assert.is(reply.headers.get('location'), `/partner/${w.partner.id}/activations/${a.code}`);
    assert.is(a.description, 'Tracker for the blue van');
    assert.is(a.status, 'unused');
    assert.is(a.activatedDeviceId, null);
    assert.is(a.activatedOptionId, null);
    assert.equal(a.hardware, { id: hw });
    assert.is(a.options.length, 3);
    for (const o of a.options) {
      assert.equal(Object.keys(o), OPTION_KEYS);
      assert.match(o.id, ID_RE);
      assert.equal(Object.keys(o.network), ['networkId', 'data']);
    }
    assert.is(new Set(a.options.map((o: { id: string }) => o.id)).size, 3);
    assert.equal(a.options.map((o: { description: string }) => o.description), ['TTN', 'pinned', '']);
    assert.equal(a.options.map((o: { device: { type: string } }) => o.device.type), [`${w.tracker}:latest`, `${w.tracker}:1`, `${w.tracker}:latest`]);
    assert.equal(a.options[0].network, { networkId: 'thethingsnetwork', data: { devEui: body.options[0].network.data!.devEui, applicationId: 'fleet-app', ...LORA } });
    assert.equal(Object.keys(a.options[0].network.data), ['devEui', 'applicationId', 'activationMethod', 'appEui', 'devAddr', 'gatewayEui', 'appSKey', 'nwkSKey'], 'the table\'s key order');
    assert.equal(a.options[1].network, { networkId: 'orangebe', data: {} });
    assert.equal(a.options[2].network, { networkId: 'orangebe', data: {} });
    const read = await h.request('GET', `/partner/${w.partner.id}/activations/${a.code}`, { token: w.partner.token });
    assert.equal(read.json, a);
    const noDescription = await w.create({ hardware: { id: w.hw() }, options: [{ device: { type: w.tracker }, network: { networkId: 'net8', data: {} } }] });
    assert.is(noDescription.status, 201, noDescription.text);
    assert.is(noDescription.json.description, '');
    assert.is(noDescription.json.options[0].description, '');
  });

  test('networks: the table rows by alias and by id (net1 devEui+applicationId, net2 devEui, net7 IMEI/IMSI, net8 {})', async ({ h }) => {
    const w = await activationWorld(h);
    const eui = w.eui();
    const rows: Array<[{ networkId: string; data: Record<string, unknown> }, { networkId: string; data: Record<string, unknown> }]> = [
      [{ networkId: 'net1', data: { devEui: eui.toLowerCase(), applicationId: 'my-app' } }, { networkId: 'thethingsnetwork', data: { devEui: eui, applicationId: 'my-app', ...LORA } }],
      [{ networkId: 'net2', data: { devEui: eui } }, { networkId: 'loriot', data: { devEui: eui, ...LORA } }],
      [{ networkId: 'net3', data: { devEui: eui } }, { networkId: 'thingpark', data: { devEui: eui, ...LORA } }],
      [{ networkId: 'net4', data: { devEui: eui } }, { networkId: 'mythings', data: { devEui: eui, ...LORA } }],
      [{ networkId: 'net5', data: { devEui: eui } }, { networkId: 'lattelecom', data: { devEui: eui, ...LORA } }],
      [{ networkId: 'net6', data: { devEui: eui } }, { networkId: 'tc', data: { devEui: eui, ...LORA } }],
      [{ networkId: 'net7', data: { imei: '356938035643809', imsi: '204080123456789' } }, { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080123456789' } }],
      [{ networkId: 'net8', data: {} }, { networkId: 'orangebe', data: {} }],
      [{ networkId: 'loriot', data: { devEui: eui, devAddr: '26011bda', appSKey: 'ab'.repeat(16), nwkSKey: 'CD'.repeat(16), appEui: '70B3D57ED0000001', gatewayEui: 'B827EBFFFE000001' } },
        { networkId: 'loriot', data: { devEui: eui, activationMethod: 'abp', appEui: '70B3D57ED0000001', devAddr: '26011BDA', gatewayEui: 'B827EBFFFE000001', appSKey: 'AB'.repeat(16), nwkSKey: 'CD'.repeat(16) } }],
    ];
    for (const [given, answered] of rows) {
      const reply = await w.create(activationBody(w.tracker, w.hw(given.networkId), [given]));
      assert.is(reply.status, 201, reply.text);
      assert.equal(reply.json.options[0].network, answered, given.networkId);
    }
    const listed = await h.request('GET', '/networks');
    assert.is(listed.status, 200);
    assert.equal(listed.json.map((n: { alias: string; id: string; required: string[] }) => [n.alias, n.id, n.required]), [
      ['net1', 'thethingsnetwork', ['devEui', 'applicationId']], ['net2', 'loriot', ['devEui']], ['net3', 'thingpark', ['devEui']],
      ['net4', 'mythings', ['devEui']], ['net5', 'lattelecom', ['devEui']], ['net6', 'tc', ['devEui']],
      ['net7', 'tmobilenl', ['imei', 'imsi']], ['net8', 'orangebe', []],
    ]);
  });

  test('create: missing, unknown, wrong and oversized input is a 4xx problem naming the field; nothing is created', async ({ h }) => {
    const w = await activationWorld(h);
    const ok = activationBody(w.tracker, 'never-made', [{ networkId: 'net8', data: {} }]);
    const option = ok.options[0];
    const bad: Array<[unknown, number, string, string]> = [
      [{ ...ok, hardware: {} }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ options: ok.options }, 422, 'VALIDATION_FAILED', 'body.hardware'],
      [{ ...ok, hardware: { id: '' } }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ ...ok, hardware: { id: 42 } }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ ...ok, hardware: { id: 'x'.repeat(129) } }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ ...ok, hardware: { id: ' padded ' } }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ ...ok, hardware: { id: 'line\nbreak' } }, 422, 'VALIDATION_FAILED', 'body.hardware.id'],
      [{ ...ok, hardware: 'never-made' }, 422, 'VALIDATION_FAILED', 'body.hardware'],
      [{ ...ok, options: [] }, 422, 'VALIDATION_FAILED', 'body.options'],
      [{ hardware: ok.hardware }, 422, 'VALIDATION_FAILED', 'body.options'],
      [{ ...ok, options: Array.from({ length: 33 }, () => option) }, 422, 'VALIDATION_FAILED', 'body.options'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net9', data: {} } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.networkId'],
      [{ ...ok, options: [{ ...option, network: { data: {} } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.networkId'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net1', data: { devEui: w.eui() } } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data.applicationId'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net2', data: {} } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data.devEui'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net2', data: { devEui: 'not-hex' } } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data.devEui'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net7', data: { imei: '356938035643809' } } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data.imsi'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net8', data: { imei: '356938035643809' } } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data.imei'],
      [{ ...ok, options: [{ ...option, network: { networkId: 'net8', data: [] } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.network.data'],
      [{ ...ok, options: [{ ...option, device: {} }] }, 422, 'VALIDATION_FAILED', 'body.options.0.device.type'],
      [{ ...ok, options: [{ ...option, device: { type: 'tracker' } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.device.type'],
      [{ ...ok, options: [{ ...option, device: { type: `${w.partner.id}/ghost` } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.device.type'],
      [{ ...ok, options: [{ ...option, device: { type: `${w.tracker}:2` } }] }, 422, 'VALIDATION_FAILED', 'body.options.0.device.type'],
      [{ ...ok, options: [option, { ...option, device: { type: `${w.tracker}:v1` } }] }, 422, 'VALIDATION_FAILED', 'body.options.1.device.type'],
      [{ ...ok, options: [{ ...option, description: 7 }] }, 422, 'VALIDATION_FAILED', 'body.options.0.description'],
      [{ ...ok, description: 'x'.repeat(4097) }, 422, 'VALIDATION_FAILED', 'body.description'],
      [{ ...ok, description: null }, 422, 'VALIDATION_FAILED', 'body.description'],
      [{ ...ok, code: 'CHOSENBYME000000' }, 422, 'VALIDATION_FAILED', 'body.code'],
      [{ ...ok, options: [{ ...option, id: 'mine' }] }, 422, 'VALIDATION_FAILED', 'body.options.0.id'],
      [{ ...ok, options: [{ ...option, device: { type: `${w.rival.id}/tracker` } }] }, 403, 'FORBIDDEN', 'body.options.0.device.type'],
    ];
    for (const [json, status, code, path] of bad) assertProblem(await w.create(json), status, code, path);
    assertProblem(await h.request('POST', `/partner/${w.partner.id}/activations`, { token: w.partner.token, body: '', contentType: 'application/json' }), 400, 'MALFORMED_JSON');
    assertProblem(await h.request('POST', `/partner/${w.partner.id}/activations`, { token: w.partner.token, body: JSON.stringify(ok), contentType: 'application/x-www-form-urlencoded' }), 415, 'UNSUPPORTED_CONTENT_TYPE');
    assertProblem(await h.request('POST', `/partner/${w.partner.id}/activations`, { token: w.partner.token, body: JSON.stringify({ ...ok, description: 'x'.repeat(70_000) }), contentType: 'application/json' }), 413, 'PAYLOAD_TOO_LARGE');
    const list = await h.request('GET', `/partner/${w.partner.id}/activations`, { token: w.partner.token });
    assert.equal(list.json.items, []);
    assert.is((await h.request('GET', `/partner/${w.partner.id}/device-types/ghost`, { token: w.partner.token })).status, 404, 'no type is made up for an unknown name');
  });

  test('spec §2.7: a type with only a draft is published as version 1 when an option names it without a version', async ({ h }) => {
    const w = await activationWorld(h);
    const base = `/partner/${w.partner.id}/device-types`;
    assert.is((await h.request('PUT', `${base}/fresh`, { token: w.partner.token, json: { assets: [{ name: 'co2', is: 'sensor', profile: { type: 'integer' } }] } })).status, 201);
    assertProblem(await w.create(activationBody(`${w.partner.id}/fresh:1`, w.hw(), [{ networkId: 'net8', data: {} }])), 422, 'VALIDATION_FAILED', 'body.options.0.device.type');
    const reply = await w.create(activationBody(`${w.partner.id}/fresh`, w.hw(), [{ networkId: 'net8', data: {} }]));
    assert.is(reply.status, 201, reply.text);
    assert.is(reply.json.options[0].device.type, `${w.partner.id}/fresh:latest`);
    const type = (await h.request('GET', `${base}/fresh`, { token: w.partner.token })).json;
    assert.equal(type.versions.map((v: { version: number }) => v.version), [1]);
    assert.equal((await h.request('GET', `${base}/fresh/versions/1`, { token: w.partner.token })).json.definition.assets[0].name, 'co2');
  });

  test('one hardware id, one code: a second create is 409; 50 racing creates give one 201', async ({ h }) => {
    const w = await activationWorld(h);
    const hw = w.hw('dup');
    const first = await w.create(activationBody(w.tracker, hw, [{ networkId: 'net8', data: {} }]));
    assert.is(first.status, 201);
    assertProblem(await w.create(activationBody(w.tracker, hw, [{ networkId: 'net8', data: {} }])), 409, 'CONFLICT', 'body.hardware.id');
    const rival = await activationWorld(h);
    assert.is((await rival.create(activationBody(rival.tracker, hw, [{ networkId: 'net8', data: {} }]))).status, 201, 'hardware ids are per partner reference system');
    const raced = w.hw('race');
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => w.create(activationBody(w.tracker, raced, [{ networkId: 'net8', data: {} }], `attempt ${i}`))));
    const statuses = replies.map((r) => r.status);
    assert.is(statuses.filter((s) => s === 201).length, 1, statuses.join(','));
    assert.is(statuses.filter((s) => s === 409).length, 49, statuses.join(','));
    for (const r of replies) if (r.status === 409) assertProblem(r, 409, 'CONFLICT', 'body.hardware.id');
    const found = await h.request('GET', `/partner/${w.partner.id}/activations?hardwareId=${raced}`, { token: w.partner.token });
    assert.is(found.json.items.length, 1);
    assert.is(found.json.items[0].code, replies.find((r) => r.status === 201)!.json.code);
  });

  return test;
}

for (const s of suitePerRegistry('http-activation', activationSuite)) s.run();
