/**
 * Live values in the console: with the device page and the ground page open in
 * headless Chromium, a state PUT over HTTP shows up without a reload, through the SSE stream the
 * console reads with fetch() (the token in the Authorization header). Needs the edge's live
 * stream (adapters/http/live/liveRoutes.ts); without it these tests are skipped, saying so.
 */
import { existsSync } from 'node:fs';
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { createDeviceOverHttp, startEmbeddedService, type CreatedDevice } from '../../support/embeddedService.ts';
import { launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir } from '../../support/tmp.ts';

interface World { service: Service; base: string; browser: Browser; device: CreatedDevice; remove(): void }
const test = suite<World>('console live values in Chromium');
const liveRoutes = new URL('../../../adapters/http/live/liveRoutes.ts', import.meta.url).pathname;

async function put(w: World, value: number): Promise<number> {
  const sent = Date.now();
  const reply = await fetch(`${w.base}/device/${w.device.id}/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${w.device.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ temperature: { value } }),
  });
  assert.is(reply.status, 202);
  return sent;
}

withChromium('console live browser tests', (chromiumPath) => {
  unless('console live browser tests', existsSync(liveRoutes) ? undefined : 'this edge has no live stream yet (adapters/http/live/liveRoutes.ts)', () => {
    test.before(async (w) => {
      const t = tempDir('console-live');
      w.remove = t.remove;
      Object.assign(w, await startEmbeddedService(t.dir));
      w.device = await createDeviceOverHttp(w.service, w.base, [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }]);
      w.browser = await launchChromium(chromiumPath);
    });

    test.after(async (w) => {
      await w.browser?.close();
      await w.service?.stop();
      w.remove?.();
    });

    test('a state PUT over HTTP changes the value on the open device page and ground page, no reload', async (w) => {
      const context = await w.browser.newContext();
      await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), w.device.userToken);
      const page = await context.newPage();
      const errors = pageErrors(page);
      let navigations = 0;
      page.on('framenavigated', () => { navigations++; });
      await page.goto(`${w.base}/console/#/device/${w.device.id}`);
      await page.getByText('● live').waitFor({ timeout: 10_000 });
      const cell = page.locator('td.value[data-asset=temperature]');
      const loads = navigations;
      for (const value of [21.5, 22.75, 19.25]) {
        const sent = await put(w, value);
        await cell.filter({ hasText: String(value) }).waitFor({ timeout: 5000 });
        console.log(`  PUT → shown on the device page in ${Date.now() - sent} ms`);
      }
      assert.is(navigations, loads, 'no reload');
      await screenshot(page, 'console-live-device');
      const ground = await page.evaluate(() => (globalThis as any).location.hash as string);
      assert.ok(ground.includes(w.device.id));
      const groundId = (await (await fetch(`${w.base}/device/${w.device.id}`, { headers: { authorization: `Bearer ${w.device.userToken}` } })).json() as { groundId: string }).groundId;
      await page.goto(`${w.base}/console/#/ground/${groundId}`);
      await page.getByText('● live').waitFor({ timeout: 10_000 });
      await put(w, 30.5);
      await page.locator(`tr[data-device="${w.device.id}"] .chip`, { hasText: '30.5' }).waitFor({ timeout: 5000 });
      assert.equal(errors, []);
      await context.close();
    });
  });
});

test.run();
