/**
 * Contract of Fleetstream's MQTT edge, whichever carries it (test/support/mqttEdgeWorlds.ts): the
 * embedded gateway (test/adapters/mqtt/mqtt-edge.test.ts) and external broker mode on Mosquitto
 * (test/adapters/mqtt/mqtt-external.test.ts). What both promise to devices, with real mqtt.js clients:
 * - states on every topic shape of spec §4.1/§4.2, JSON and CBOR, go through admission into the store;
 * - a refused publish is recorded once among the device's rejections, with its code;
 * - asset commands (spec §4.3) reach subscribers of both command topics at QoS 1, and stored states
 *   come back on the device's feed topics;
 * - commands for a device nobody subscribes for wait and arrive in order once it subscribes; one
 *   for a device away with a persistent session reaches it when it comes back;
 * - a device cannot put states into, or commands before, another device.
 * Mode-specific behaviour (MQTT 3.1.1 refusals, reason codes, auth, shared subscriptions) stays in
 * the files of each mode.
 */
import { encode as cborEncode } from 'cbor-x';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { suite, unless } from '../support/suite.ts';
import { THERMO_ASSETS, type MqttEdgeWorld } from '../support/mqttEdgeWorlds.ts';
import { waitFor } from '../support/tmp.ts';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
function cliMissing(): string | undefined {
  return spawnSync('mosquitto_pub', ['--help']).error === undefined ? undefined : 'no mosquitto_pub on PATH (apt-get install mosquitto-clients)';
}

/** Runs a Mosquitto command-line client; resolves with its stdout, rejects on a non-zero exit. */
function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}: ${err}`))));
  });
}

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();

export function mqttEdgeContract(name: string, start: () => Promise<MqttEdgeWorld>): void {
  const s = suite(`mqtt edge contract: ${name}`);
  let w: MqttEdgeWorld;
  s.before(async () => { w = await start(); });
  s.after(async () => w.stop());

  const thermo = () => w.device('thermo', THERMO_ASSETS);

  s('states on every topic shape, JSON and CBOR, are admitted and stored, for every protocol version', async () => {
    for (const protocolVersion of w.protocolVersions) {
      const dev = await thermo();
      const c = await w.connect(dev, { protocolVersion });
      await c.publishAsync(`asset/${dev.assetIds.temperature}/state`, json({ value: 21.5, at: at(0) }), { qos: 1 });
      await c.publishAsync(`device/${dev.deviceId}/asset/on/state`, json({ value: true, at: at(1) }), { qos: 1 });
      // MQTT 5 says the content type; 3.1.1 payloads are told apart by their first byte.
      const typed = (contentType: string) => (protocolVersion === 5 ? { properties: { contentType } } : {});
      await c.publishAsync(`device/${dev.deviceId}/state`, json({ label: { value: 'json', at: at(2) } }), { qos: 1, ...typed('application/json') });
      await c.publishAsync(`device/${dev.deviceId}/state`, Buffer.from(cborEncode({ temperature: 22 })), { qos: 1, ...typed('application/cbor') });
      await c.publishAsync(`device/${dev.deviceId}/state`, Buffer.from(cborEncode({ temperature: { value: 23, at: at(4) } })), { qos: 1 });
      await c.publishAsync(`device/${dev.deviceId}/state`, json({ label: { value: 'qos0' } }), { qos: 0 });
      const mine = () => w.appended.filter((e) => e.deviceId === dev.deviceId);
      await waitFor(() => mine().length === 6, 10_000, `six uplinks appended (MQTT ${protocolVersion})`);
      const shapes = mine().map((e) => [e.channel, e.contentType, e.asset ?? '-'].join(' ')).sort();
      assert.equal(shapes, ['mqtt cbor -', 'mqtt cbor -', 'mqtt json -', 'mqtt json -', 'mqtt json on', 'mqtt json temperature'], `MQTT ${protocolVersion}`);
      await waitFor(async () => (await w.store.history({ deviceId: dev.deviceId, asset: 'temperature' })).length === 3
        && (await w.store.history({ deviceId: dev.deviceId, asset: 'label' })).length === 2, 15_000, 'states stored');
      assert.equal((await w.store.history({ deviceId: dev.deviceId, asset: 'temperature' })).map((t) => t.value).sort(), [21.5, 22, 23]);
      assert.equal((await w.store.history({ deviceId: dev.deviceId, asset: 'on' })).map((t) => [t.value, t.ts]), [[true, Date.parse(at(1))]]);
      assert.equal((await w.store.history({ deviceId: dev.deviceId, asset: 'label' })).map((t) => t.value).sort(), ['json', 'qos0']);
      assert.equal(w.rejections.rows.filter((r) => r.deviceId === dev.deviceId), [], 'nothing refused');
    }
  });

  unless(`mqtt edge contract: ${name}: Mosquitto command-line clients`, cliMissing(), () => s('mosquitto_pub states and mosquitto_sub commands work with every protocol version (docs/mqtt.md examples)', async () => {
    const dev = await w.device('cli', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
    const versions = w.protocolVersions.map((v) => (v === 5 ? 'mqttv5' : 'mqttv311'));
    for (const [i, version] of versions.entries()) {
      await run('mosquitto_pub', [...w.cliArgs(dev), '-V', version, '-q', '1', '-t', `device/${dev.deviceId}/asset/t/state`, '-m', JSON.stringify({ value: i, at: at(i) })]);
      // One command, received by a subscriber that exits after it (-C 1).
      const sub = run('mosquitto_sub', [...w.cliArgs(dev), '-V', version, '-q', '1', '-t', `device/${dev.deviceId}/asset/led/command`, '-C', '1', '-W', '20']);
      const id = await w.command(dev.deviceId, 'led', i % 2 === 0, at(i));
      assert.equal(JSON.parse(await sub), { value: i % 2 === 0, at: new Date(at(i)).toISOString() }, version);
      await waitFor(() => w.commandStatus(dev.deviceId, id) === 'delivered', 5000, `${version} command delivered`);
    }
    await waitFor(async () => (await w.store.history({ deviceId: dev.deviceId, asset: 't' })).length === versions.length, 15_000, 'states stored');
    assert.equal((await w.store.history({ deviceId: dev.deviceId, asset: 't', order: 'asc' })).map((x) => x.value), versions.map((_, i) => i));
  }));

  s('a refused publish is recorded once among the device\'s rejections, with its code; the next one is served', async () => {
    const dev = await thermo();
    const c = await w.connect(dev);
    const cases: [string, Buffer, string][] = [
      [`asset/${dev.assetIds.temperature}/state`, Buffer.from('{"value":'), 'MALFORMED_JSON'],
      [`device/${dev.deviceId}/asset/temperature/state`, json({ val: 1 }), 'INVALID_STATE'],
      [`device/${dev.deviceId}/state`, Buffer.from([0xa1, 0x61]), 'MALFORMED_CBOR'],
      [`device/${dev.deviceId}/asset/nope/state`, json({ value: 1 }), 'UNKNOWN_ASSET'],
    ];
    for (const [topic, payload, code] of cases) {
      const before = w.rejections.rows.filter((r) => r.deviceId === dev.deviceId).length;
      await c.publishAsync(topic, payload, { qos: 1 });
      await waitFor(() => w.rejections.rows.filter((r) => r.deviceId === dev.deviceId).length > before, 5000, `${topic} ${code} recorded`);
      const rows = w.rejections.rows.filter((r) => r.deviceId === dev.deviceId).slice(before);
      assert.equal(rows.map((r) => [r.code, r.channel]), [[code, 'mqtt']], topic);
      assert.ok(rows[0].reason.length > 0 && rows[0].reason.length < 300);
    }
    // A value of the wrong type passes the edge and is refused by admission (the profile), once.
    await c.publishAsync(`device/${dev.deviceId}/asset/on/state`, json({ value: 'yes' }), { qos: 1 });
    await c.publishAsync(`device/${dev.deviceId}/asset/on/state`, json({ value: false, at: at(9) }), { qos: 1 });
    await waitFor(async () => (await w.store.history({ deviceId: dev.deviceId, asset: 'on' })).length === 1, 15_000, 'the good state after the bad ones');
    await waitFor(() => w.rejections.rows.some((r) => r.deviceId === dev.deviceId && r.code === 'PROFILE_VIOLATION'), 10_000, 'profile violation recorded');
    await new Promise((r) => setTimeout(r, 300));
    const rows = w.rejections.rows.filter((r) => r.deviceId === dev.deviceId);
    assert.equal(rows.map((r) => r.code), [...cases.map(([, , code]) => code), 'PROFILE_VIOLATION'], 'each refusal recorded once');
    assert.equal((await w.store.history({ deviceId: dev.deviceId, asset: 'on' })).map((t) => t.value), [false]);
  });

  s('asset commands reach subscribers of both command topics at QoS 1 as {value, at}; stored states come back on the feed', async () => {
    const dev = await w.device('valve', [{ name: 'led', is: 'actuator', profile: { type: 'boolean' } }, { name: 't', profile: { type: 'number' } }]);
    const byDevice = await w.connect(dev);
    const byAsset = await w.connect(dev);
    const got: [string, string][] = [];
    const feed: [string, unknown][] = [];
    byDevice.on('message', (topic, p) => (topic.endsWith('/feed') ? feed.push([topic, JSON.parse(p.toString())]) : got.push([topic, p.toString()])));
    byAsset.on('message', (topic, p) => got.push([topic, p.toString()]));
    const granted = await byDevice.subscribeAsync([`device/${dev.deviceId}/asset/+/command`, `device/${dev.deviceId}/asset/+/feed`], { qos: 1 });
    assert.equal(granted.map((g) => g.qos), [1, 1]);
    assert.equal((await byAsset.subscribeAsync(`asset/${dev.assetIds.led}/command`, { qos: 1 }))[0].qos, 1);

    const id = await w.command(dev.deviceId, 'led', true, '2026-02-03T04:05:06.000Z');
    await waitFor(() => got.length === 2, 10_000, 'both command topics');
    const body = JSON.stringify({ value: true, at: '2026-02-03T04:05:06.000Z' });
    assert.equal(got.sort(), [[`asset/${dev.assetIds.led}/command`, body], [`device/${dev.deviceId}/asset/led/command`, body]]);
    await waitFor(() => w.commandStatus(dev.deviceId, id) === 'delivered', 5000, 'delivered');

    await byDevice.publishAsync(`device/${dev.deviceId}/asset/t/state`, json({ value: 7.5, at: at(7) }), { qos: 1 });
    await waitFor(() => feed.length === 1, 15_000, 'feed of the stored state');
    assert.equal(feed, [[`device/${dev.deviceId}/asset/t/feed`, { value: 7.5, at: '2026-01-01T00:00:07.000Z' }]]);
  });

  s('commands for a device nobody subscribes for wait, then arrive in order once it subscribes', async () => {
    const dev = await w.device('late', [{ name: 'level', is: 'actuator', profile: { type: 'integer' } }]);
    const ids: string[] = [];
    for (let v = 0; v < 4; v++) ids.push(await w.command(dev.deviceId, 'level', v));
    await waitFor(() => ids.every((id) => w.commandStatus(dev.deviceId, id) === 'queued'), 5000, 'queued');
    const c = await w.connect(dev);
    const got: number[] = [];
    c.on('message', (_t, p) => got.push(JSON.parse(p.toString()).value));
    await c.subscribeAsync(`device/${dev.deviceId}/asset/level/command`, { qos: 1 });
    await waitFor(() => got.length === 4, 10_000, 'four commands');
    assert.equal(got, [0, 1, 2, 3]);
    await waitFor(() => ids.every((id) => w.commandStatus(dev.deviceId, id) === 'delivered'), 5000, 'all delivered');
  });

  s('a command for a device away with a persistent session reaches it when it comes back', async () => {
    const dev = await w.device('sleeper', [{ name: 'level', is: 'actuator', profile: { type: 'integer' } }]);
    const clientId = `sleeper-${process.pid}-${Date.now()}`;
    const persistent = { clientId, clean: false, properties: { sessionExpiryInterval: 300 } };
    const first = await w.connect(dev, persistent);
    await first.subscribeAsync(`device/${dev.deviceId}/asset/level/command`, { qos: 1 });
    await first.endAsync();
    const ids = [await w.command(dev.deviceId, 'level', 1), await w.command(dev.deviceId, 'level', 2)];
    await waitFor(() => ids.every((id) => w.commandStatus(dev.deviceId, id) !== undefined), 5000, 'taken by the actors');
    const got: number[] = [];
    // Listening from the CONNACK on, and without a new SUBSCRIBE: the session kept the subscription.
    await w.connect(dev, persistent, (_t, p) => got.push(JSON.parse(p.toString()).value));
    await waitFor(() => got.length >= 2, 15_000, 'the queued commands');
    assert.equal([...new Set(got)], [1, 2], 'in order');
    await waitFor(() => ids.every((id) => w.commandStatus(dev.deviceId, id) === 'delivered'), 10_000, 'delivered');
  });

  s('a device cannot store states for another device or reach its commands', async () => {
    const attacker = await w.device('attacker', [{ name: 't', profile: { type: 'number' } }]);
    const victim = await w.device('victim', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
    const victimClient = await w.connect(victim);
    const commands: string[] = [];
    victimClient.on('message', (topic) => commands.push(topic));
    await victimClient.subscribeAsync([`device/${victim.deviceId}/asset/+/command`, `asset/${victim.assetIds.led}/command`], { qos: 1 });
    for (const protocolVersion of w.protocolVersions) {
      const c = await w.connect(attacker, { protocolVersion });
      const forged = [
        `device/${victim.deviceId}/state`, `device/${victim.deviceId}/asset/t/state`, `asset/${victim.assetIds.t}/state`,
        `device/${victim.deviceId}/asset/led/command`, `asset/${victim.assetIds.led}/command`,
      ];
      for (const topic of forged) {
        // MQTT 5 answers a refusal with a reason code (mqtt.js rejects); 3.1.1 acknowledges and drops.
        await c.publishAsync(topic, topic.endsWith('/state') && !topic.includes('/asset/') ? json({ t: { value: 666 } }) : json({ value: 666 }), { qos: 1 }).catch(() => undefined);
      }
      // Its own uplink after the forged ones: once it is stored, the forged ones had their turn.
      await c.publishAsync(`device/${attacker.deviceId}/asset/t/state`, json({ value: protocolVersion }), { qos: 1 });
      await waitFor(async () => (await w.store.history({ deviceId: attacker.deviceId, asset: 't' })).length === w.protocolVersions.indexOf(protocolVersion) + 1, 15_000, 'the attacker\'s own state');
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.is(w.appended.filter((e) => e.deviceId === victim.deviceId).length, 0, 'nothing appended for the victim');
    assert.equal(await w.store.history({ deviceId: victim.deviceId, asset: 't' }), []);
    assert.equal(commands, [], 'no forged command reached the victim');
  });

  s.run();
}
