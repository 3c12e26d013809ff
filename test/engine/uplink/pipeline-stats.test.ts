/**
 * UplinkPipeline.stats reports live figures: uplinks in flight (dispatched, not yet durable) and the
 * actor counts, which callers (drain detection, benchmarks, health) read while the pipeline runs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { MemoryDirectory } from '../../../engine/ports/directory.ts';
import type { Log } from '../../../engine/ports/log.ts';
import { UplinkPipeline, type RowSink } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { DeviceActors, deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { Topics, type StateRow } from '../../../schemas/messages.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

/** A row sink whose appends become durable only when the test says so. */
class HeldRows implements RowSink {
  held: Array<{ rows: readonly StateRow[]; resolve(): void }> = [];
  append(rows: readonly StateRow[]): Promise<void> {
    return new Promise((resolve) => this.held.push({ rows, resolve }));
  }
  release(): void {
    for (const h of this.held.splice(0)) h.resolve();
  }
  async flush(): Promise<void> {}
}

const tmp = tempDir('pipeline-stats');
let log: Log;

test.before(async () => {
  log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }]);
});

test.after(async () => {
  await log.close();
  tmp.remove();
});

test('stats count uplinks in flight and live, created and passivated actors', async () => {
  const directory = new MemoryDirectory();
  for (let d = 0; d < 3; d++) directory.put({ id: `d${d}`, assets: [{ id: `a${d}`, name: 'n', is: 'sensor', profile: { type: 'integer' } }] });
  const rows = new HeldRows();
  const pipeline = new UplinkPipeline({ log, rows, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, group: 'stats', commitIntervalMs: 10 });
  const body = new TextEncoder().encode(JSON.stringify({ n: { value: 1 } }));
  await log.append(Topics.uplinks, Array.from({ length: 6 }, (_, i) => ({
    key: `d${i % 3}`,
    value: encodeEnvelope({ id: `u${i}`, channel: 'http', contentType: 'json', deviceId: `d${i % 3}`, receivedAt: 1000 + i, body }),
  })));
  await pipeline.start();
  try {
    await checkStats(pipeline, rows);
  } finally {
    rows.release(); // an assertion failing while rows are held must not leave stop() waiting on them
    await pipeline.stop();
  }
});

async function checkStats(pipeline: UplinkPipeline<DeviceActors>, rows: HeldRows): Promise<void> {
  await waitFor(() => rows.held.length === 6, 5000, 'six appends held by the sink');
  assert.is(pipeline.stats.received, 6);
  assert.is(pipeline.stats.stored, 6);
  assert.is(pipeline.stats.inFlight, 6, 'nothing is durable yet');
  assert.is(pipeline.stats.actors, 3, 'one live actor per device');
  assert.is(pipeline.stats.actorsCreated, 3);
  assert.is(pipeline.stats.actorsPassivated, 0);

  rows.release();
  await pipeline.drained();
  assert.is(pipeline.stats.inFlight, 0, 'everything durable');
  pipeline.actors.sweep(0);
  assert.is(pipeline.stats.actors, 0);
  assert.is(pipeline.stats.actorsPassivated, 3);
  assert.equal({ ...pipeline.stats }.actorsCreated, 3, 'a spread copy carries the figures');
}

test.run();
