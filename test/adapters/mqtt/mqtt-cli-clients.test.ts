/**
 * The embedded edge with the Mosquitto command-line clients (mosquitto_pub, mosquitto_sub), MQTT 5
 * and 3.1.1, over TCP and TLS: states stored, refusals answered with reason codes (MQTT 5), commands
 * delivered to a subscriber. The examples of docs/mqtt.md are these commands.
 */
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { opensslMissing, selfSignedCertificate } from '../../support/selfSignedCertificate.ts';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const run = promisify(execFile);

function cliMissing(): string | undefined {
  try {
    execFileSync('mosquitto_pub', ['--help'], { stdio: 'pipe' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'mosquitto_pub not found (apt-get install mosquitto-clients)';
  }
  return opensslMissing();
}

const t = suite('mosquitto command-line clients on the embedded edge');
const tmp = tempDir('mqtt-cli');
let plain: MqttStack;
let secure: MqttStack;
let pair: { cert: string; key: string; certFile: string };

unless('mqtt-cli-clients', cliMissing(), () => {
  t.before(async () => {
    pair = selfSignedCertificate(tmp.dir)!;
    plain = await MqttStack.start({ edge: { maxRefusals: 100 } });
    secure = await MqttStack.start({ edge: { maxRefusals: 100, tls: pair } });
  });
  t.after(async () => {
    await plain.stop();
    await secure.stop();
    tmp.remove();
  });

  const cases = [
    { name: 'TCP', stack: () => plain, tls: [] as string[] },
    { name: 'TLS', stack: () => secure, tls: ['--cafile', 'CERT'] },
  ];
  for (const { name, stack, tls } of cases) {
    for (const version of ['mqttv5', 'mqttv311'] as const) {
      t(`${name}, ${version}: mosquitto_pub states are stored, mosquitto_sub receives a command`, async () => {
        const s = stack();
        const d: SeededDevice = await s.device(`cli-${name}-${version}`, [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
        const common = ['-h', '127.0.0.1', '-p', String(s.edge.port), '-u', d.token, '-V', version, ...tls.map((a) => (a === 'CERT' ? pair.certFile : a))];
        const before = s.appended.length;
        await run('mosquitto_pub', [...common, '-q', '1', '-t', `device/${d.deviceId}/asset/t/state`, '-m', '{"value": 21.5}']);
        await run('mosquitto_pub', [...common, '-q', '1', '-t', `asset/${d.assetIds.t}/state`, '-m', '{"value": 22}']);
        await run('mosquitto_pub', [...common, '-q', '0', '-t', `device/${d.deviceId}/state`, '-m', '{"t": {"value": 23}}']);
        await waitFor(() => s.appended.length === before + 3, 5000, 'three appended');
        assert.equal(s.appended.slice(before).map((e) => e.deviceId), [d.deviceId, d.deviceId, d.deviceId]);

        const refused = await run('mosquitto_pub', [...common, '-d', '-q', '1', '-t', `device/${d.deviceId}/asset/nope/state`, '-m', '{"value": 1}']).catch((e: { stdout: string }) => e);
        if (version === 'mqttv5') assert.match(refused.stdout, /PUBACK \(Mid: 1, RC:144\)/, 'MQTT 5: topic name invalid');
        else assert.match(refused.stdout, /PUBACK \(Mid: 1, RC:0\)/, `3.1.1: acknowledged and dropped: ${refused.stdout}`);
        assert.is(s.appended.length, before + 3);

        const sub = spawn('mosquitto_sub', [...common, '-q', '1', '-C', '1', '-W', '10', '-t', `device/${d.deviceId}/asset/+/command`, '-v']);
        let out = '';
        sub.stdout.on('data', (chunk) => { out += chunk; });
        const exited = new Promise<number | null>((resolve) => sub.once('exit', resolve));
        const payload = new TextEncoder().encode('{"value":true}');
        const delivery = { commandId: 'c', deviceId: d.deviceId, asset: { id: d.assetIds.led, name: 'led' }, payload };
        let outcome = 'offline';
        await waitFor(async () => (outcome = await s.edge.commands.deliver(delivery)) !== 'offline', 5000, 'subscribed');
        assert.is(outcome, 'delivered');
        assert.is(await exited, 0);
        assert.is(out.trim(), `device/${d.deviceId}/asset/led/command {"value":true}`);
      });
    }
  }
});

t.run();
