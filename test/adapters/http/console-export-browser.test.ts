/**
 * The console's downloads in real headless Chromium against the whole service on its embedded
 * defaults (chDB): the asset page's buttons download the states of the window shown, the ground
 * page's the ground's; the files hold what the store holds (CSV with its header and guarded
 * formula-like text, NDJSON, Parquet, which chDB writes).
 */
import { readFileSync } from 'node:fs';
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { createDeviceOverHttp, startEmbeddedService, type CreatedDevice } from '../../support/embeddedService.ts';
import { launchChromium, pageErrors, withChromium } from '../../support/browser.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { parseCsv } from '../../contracts/stateExport.contract.ts';

interface World { service: Service; base: string; browser: Browser; device: CreatedDevice; groundId: string; remove(): void }
const test = suite<World>('console downloads in Chromium');

const ASSETS = [
  { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
  { name: 'note', is: 'sensor', profile: { type: 'string' } },
];

async function newContext(w: World): Promise<BrowserContext> {
  const context = await w.browser.newContext({ viewport: { width: 1100, height: 900 }, acceptDownloads: true });
  await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), w.device.userToken);
  return context;
}

async function downloadOf(page: Page, button: string): Promise<{ name: string; bytes: Buffer }> {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15_000 }), page.getByRole('button', { name: button }).click()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), bytes: readFileSync(path!) };
}

withChromium('console export browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-export');
    w.remove = t.remove;
    Object.assign(w, await startEmbeddedService(t.dir));
    w.device = await createDeviceOverHttp(w.service, w.base, ASSETS);
    w.groundId = (await w.service.registry.getDevice(w.device.id))!.groundId;
    w.browser = await launchChromium(chromiumPath);
    const now = Date.now();
    for (const [i, body] of [{ temperature: { value: 21.5 }, note: { value: '=1+2' } }, { temperature: { value: -3 } }].entries()) {
      const reply = await fetch(`${w.base}/device/${w.device.id}/state`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${w.device.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(Object.fromEntries(Object.entries(body).map(([k, v]) => [k, { ...v, at: new Date(now - 60_000 + i * 1000).toISOString() }]))),
      });
      assert.is(reply.status, 202);
    }
    await waitFor(async () => {
      const reply = await fetch(`${w.base}/device/${w.device.id}/asset/temperature/states`, { headers: { authorization: `Bearer ${w.device.userToken}` } });
      return ((await reply.json()) as { items: unknown[] }).items.length === 2;
    }, 15_000, 'the states stored');
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    w.remove?.();
  });

  test('the asset page: CSV, NDJSON and Parquet of the window shown, as files named after the asset', async (w) => {
    const context = await newContext(w);
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/#/device/${w.device.id}/asset/temperature`);
    await page.getByRole('button', { name: 'Download Parquet' }).waitFor({ timeout: 10_000 });
    const csv = await downloadOf(page, 'Download CSV');
    assert.match(csv.name, new RegExp(`^${w.device.id}-temperature-.*\\.csv$`));
    const [head, ...rows] = parseCsv(csv.bytes.toString('utf8'));
    assert.is(head.join(','), 'device,asset,at,received_at,kind,value,uplink_id,seq');
    assert.equal(rows.map((r) => r[5]).sort(), ['-3', '21.5']);
    const ndjson = await downloadOf(page, 'Download NDJSON');
    assert.equal(ndjson.bytes.toString('utf8').trim().split('\n').map((l) => JSON.parse(l).value).sort(), [-3, 21.5]);
    const parquet = await downloadOf(page, 'Download Parquet');
    assert.match(parquet.name, /\.parquet$/);
    assert.is(parquet.bytes.subarray(0, 4).toString('latin1'), 'PAR1');
    assert.equal(errors, []);
    await context.close();
  });

  test('the ground page: every state of its devices; a formula-like string guarded in the CSV', async (w) => {
    const context = await newContext(w);
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/#/ground/${w.groundId}`);
    await page.getByRole('heading', { name: 'Export' }).waitFor({ timeout: 10_000 });
    const csv = await downloadOf(page, 'Download CSV');
    assert.match(csv.name, new RegExp(`^ground-${w.groundId}-.*\\.csv$`));
    const rows = parseCsv(csv.bytes.toString('utf8')).slice(1);
    assert.equal(rows.map((r) => `${r[1]}=${r[5]}`).sort(), ['note=\'=1+2', 'temperature=-3', 'temperature=21.5']);
    assert.equal(errors, []);
    await context.close();
  });
});

test.run();
