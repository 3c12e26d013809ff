/**
 * Takes docs/console.png, the README's picture of the console: the service on its embedded
 * defaults, the quickstart's demo device with an hour of states, its asset page in headless
 * Chromium. Run again after the console's look changes:
 *
 *   npx node scripts/console-screenshot.ts [out=docs/console.png]
 */
import { startEmbeddedService } from '../test/support/embeddedService.ts';
import { chromiumPath, launchChromium } from '../test/support/browser.ts';
import { tempDir } from '../test/support/tmp.ts';
import { quickstart } from '../engine/admin/adminActions.ts';
import { demoState } from '../app/demoDevice.ts';

const out = process.argv[2] ?? new URL('../docs/console.png', import.meta.url).pathname;
const path = chromiumPath();
if (path === undefined) throw new Error('no Chromium: set CHROMIUM_PATH or apt-get install chromium');
const tmp = tempDir('screenshot');
const { service, base } = await startEmbeddedService(tmp.dir);
try {
  const demo = await quickstart(service.registry, 'demo');
  const now = Date.now();
  const states = [];
  for (let i = 0; i < 55; i++) {
    const t = now - (55 - i) * 60_000;
    const state = demoState(t);
    states.push(Object.fromEntries(Object.entries(state).map(([k, v]) => [k, { ...v, at: new Date(t).toISOString() }])));
  }
  const reply = await fetch(`${base}/device/${demo.deviceId}/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${demo.deviceToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(states),
  });
  if (reply.status !== 202) throw new Error(`states refused: ${reply.status} ${await reply.text()}`);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const browser = await launchChromium(path);
  const context = await browser.newContext({ viewport: { width: 960, height: 640 } });
  await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), demo.userToken);
  const page = await context.newPage();
  await page.goto(`${base}/console/#/device/${demo.deviceId}/asset/temperature`);
  await page.locator('[data-testid=chart] canvas').waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: out });
  await browser.close();
  console.log(`wrote ${out}`);
} finally {
  await service.stop();
  tmp.remove();
}
