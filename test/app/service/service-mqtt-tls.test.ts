/**
 * The service's MQTT edge over TLS, configured by certificate and key files (one chDB per process:
 * its own file).
 */
import { test, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import { createService } from '../../../app/createService.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { opensslMissing, selfSignedCertificate } from '../../support/selfSignedCertificate.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

unless('service-mqtt TLS', opensslMissing(), () => test('with MQTT_TLS_CERT_FILE and MQTT_TLS_KEY_FILE the service speaks MQTT over TLS', async () => {
  const certs = tempDir('service-mqtt-tls');
  const pair = selfSignedCertificate(certs.dir);
  if (pair === undefined) throw new Error('openssl made no certificate');
  const config = loadConfig({ 'data-dir': `${certs.dir}/data`, port: '0', host: '127.0.0.1', 'mqtt-port': '0', 'mqtt-host': '127.0.0.1', 'metrics-port': '0' }, { MQTT_TLS_CERT_FILE: pair.certFile, MQTT_TLS_KEY_FILE: pair.keyFile });
  const secure = await createService({ logger: silentLogger, config });
  try {
    const user = await secure.registry.createUser({ name: 'u' });
    const ground = await secure.registry.createGround({ name: 'g', userId: user.entity.id });
    const { device, token } = await secure.registry.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
    const client = await mqtt.connectAsync(`mqtts://127.0.0.1:${secure.mqttPort}`, { ca: pair.cert, username: token, password: token, reconnectPeriod: 0, connectTimeout: 5000 });
    await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: 7 }), { qos: 1 });
    await client.endAsync();
    await waitFor(async () => (await secure.store.latest(device.id)).some((s) => s.value === 7), 15_000, 'TLS state stored');
    // A plain client never gets a CONNACK from the TLS port: it ends in close or error, not connect.
    const plain = mqtt.connect(`mqtt://127.0.0.1:${secure.mqttPort}`, { username: token, reconnectPeriod: 0, connectTimeout: 2000 });
    const outcome = await new Promise<string>((resolve) => {
      plain.once('connect', () => resolve('connect'));
      plain.once('close', () => resolve('close'));
      plain.once('error', () => resolve('error'));
    });
    plain.end(true);
    assert.not.equal(outcome, 'connect', 'a plain MQTT client is not served on the TLS port');
  } finally {
    await secure.stop();
    certs.remove();
  }
  assert.throws(() => loadConfig({}, { MQTT_TLS_CERT_FILE: pair.certFile }), /go together/);
}));

test.run();
