/**
 * A process with role engine runs no HTTP edge: it answers probes on the HTTP host and port
 * settings, and serves its metrics on the metrics listener as every role does (its own file: chDB
 * allows one data directory per process).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createService } from '../../../app/createService.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { Topics } from '../../../schemas/messages.ts';
import { sample } from '../../support/prometheusText.ts';
import { tempDir } from '../../support/tmp.ts';

const tmp = tempDir('metrics-engine');
test.after(() => tmp.remove());

test('a process with role engine serves /health and /ready on its HTTP port settings and /metrics on the metrics listener', async () => {
  const engineOnly = await createService({
    logger: silentLogger,
    config: {
      ...defaultConfig, role: 'engine', dataDir: tmp.dir,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      metrics: { host: '127.0.0.1', port: 0 },
      engine: { ...defaultConfig.engine, partitions: 2 },
    },
  });
  try {
    assert.is(engineOnly.httpPort, undefined, 'no HTTP edge');
    const probe = `http://127.0.0.1:${engineOnly.probesPort}`;
    assert.is((await fetch(`${probe}/health`)).status, 200);
    assert.is((await fetch(`${probe}/ready`)).status, 200, 'ready: the only member holds both partitions');
    const onProbes = await fetch(`${probe}/metrics`);
    assert.is(onProbes.status, 404, 'no metrics on the HTTP port without a metrics token');
    assert.not.match(await onProbes.text(), /fleetstream_/);
    assert.is((await fetch(`${probe}/device/x`)).status, 404);

    assert.ok(engineOnly.metricsPort !== undefined && engineOnly.metricsPort !== engineOnly.probesPort, 'a listener of its own');
    const text = await (await fetch(`http://127.0.0.1:${engineOnly.metricsPort}/metrics`)).text();
    assert.is(sample(text, 'fleetstream_partitions_assigned'), 2);
    assert.is(sample(text, 'fleetstream_consumer_lag', { topic: Topics.uplinks, partition: '1' }), 0);
    assert.is(sample(text, 'fleetstream_uplinks_received_total', { channel: 'http' }), undefined, 'no edge metrics');
    assert.is((await fetch(`http://127.0.0.1:${engineOnly.metricsPort}/ready`)).status, 404, 'probes stay on the HTTP port');
  } finally {
    await engineOnly.stop();
  }
});

test.run();
