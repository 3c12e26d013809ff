/**
 * The primary's export relay for embedded edge workers (app/exportRelay.ts) over a real chDB store:
 * only a request carrying the secret is answered; the selection's refusals come back to the worker
 * with their codes and details; an oversized or malformed body is refused; a worker that leaves
 * stops the export and frees its slot.
 */
import * as assert from 'uvu/assert';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { remoteExports, serveExportRelay } from '../../../app/exportRelay.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { readAll } from '../../contracts/stateExport.contract.ts';
import { rejectsWith } from '../../contracts/store.contract.ts';
import { suite } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';

const test = suite('export relay');
const tmp = tempDir('export-relay');
const store = createChdbStore({ dir: tmp.dir, maxConcurrentExports: 1 });
let relay: Awaited<ReturnType<typeof serveExportRelay>>;
const T0 = Date.UTC(2026, 0, 1);

test.before(async () => {
  await store.init();
  await store.append(Array.from({ length: 100_000 }, (_, k) => ({ deviceId: 'd1', asset: 't', ts: T0 + k, receivedAt: T0 + k, uplinkId: `u${k}`, value: k })));
  relay = await serveExportRelay(store);
});
test.after(async () => {
  await relay.close();
  await store.close();
  tmp.remove();
});

const post = (headers: Record<string, string>, body: string, method = 'POST') =>
  fetch(`http://127.0.0.1:${relay.address.port}/export`, { method, headers, body: method === 'GET' ? undefined : body });

test('without the secret, with a wrong one, or by GET: 404, nothing run', async () => {
  const selection = JSON.stringify({ devices: ['d1'], format: 'csv' });
  for (const headers of [{} as Record<string, string>, { 'x-fleetstream-export-relay': 'x'.repeat(64) }, { 'x-fleetstream-export-relay': relay.address.secret.slice(1) }]) {
    const res = await post(headers, selection);
    assert.is(res.status, 404);
    assert.is(await res.text(), '');
  }
  assert.is((await post({ 'x-fleetstream-export-relay': relay.address.secret }, '', 'GET')).status, 404);
});

test('a worker\'s export: the engine\'s bytes; refusals with their codes and details; bad bodies refused', async () => {
  const exports = remoteExports(async () => relay.address);
  assert.equal(await exports.exportFormats(), ['csv', 'ndjson', 'parquet']);
  const csv = (await readAll(await exports.exportStates({ devices: ['d1'], to: T0 + 2, format: 'csv' }))).toString('utf8');
  assert.is(csv.split('\n').filter(Boolean).length, 3);
  const invalid = await rejectsWith(exports.exportStates({ devices: ["d1' OR 1=1"], format: 'csv' }), 'VALIDATION_FAILED');
  assert.ok(Array.isArray(invalid.detail?.errors));
  const secret = { 'x-fleetstream-export-relay': relay.address.secret };
  const huge = await post(secret, JSON.stringify({ devices: ['x'.repeat(70_000)], format: 'csv' }));
  assert.is(huge.status, 500);
  assert.is(((await huge.json()) as { code: string }).code, 'PAYLOAD_TOO_LARGE');
  const malformed = await post(secret, '{"devices": [');
  assert.is(malformed.status, 500);
  assert.is(((await malformed.json()) as { code: string }).code, 'INTERNAL');
});

test('a worker that leaves mid-export frees the slot (the store allows one here)', async () => {
  const exports = remoteExports(async () => relay.address);
  const controller = new AbortController();
  const iterator = (await exports.exportStates({ devices: ['d1'], format: 'ndjson', signal: controller.signal }))[Symbol.asyncIterator]();
  assert.ok(!(await iterator.next()).done);
  await rejectsWith(exports.exportStates({ devices: ['d1'], format: 'csv' }), 'BACKPRESSURE');
  controller.abort();
  await iterator.return!();
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await readAll(await exports.exportStates({ devices: ['d1'], to: T0 + 1, format: 'csv' }));
      break;
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'BACKPRESSURE');
      assert.ok(Date.now() < deadline, 'the slot freed within 10 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

test.run();
