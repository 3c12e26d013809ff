/**
 * Console first load in headless Chromium: bytes transferred and time to interactive,
 * cold (a fresh browser context, nothing cached) and warm (the same context again: every file is
 * revalidated with its ETag and answered 304). Baseline measured in the same run and browser:
 * loading /health, one tiny same-origin document, so the ratio says what the console costs over
 * the cheapest page this server has. Not part of the test suite.
 *
 *   npx node bench/console.bench.ts [runs=5]
 *
 * "Interactive" is when the page a person asked for can be used: the sign-in field focusable
 * (signed out); the device's latest value in its table (signed in, device page); the chart drawn
 * (asset page, which loads uPlot on demand). Times are from navigation start (performance.now()
 * in the page). Needs Chromium (CHROMIUM_PATH or /usr/bin/chromium).
 */
import type { BrowserContext, Page } from 'playwright-core';
import { startEmbeddedService } from '../test/support/embeddedService.ts';
import { chromiumPath, launchChromium } from '../test/support/browser.ts';
import { tempDir } from '../test/support/tmp.ts';
import { quickstart } from '../engine/admin/adminActions.ts';

const runs = Number(process.argv[2] ?? 5);
const path = chromiumPath();
if (path === undefined) {
  console.log('console bench skipped: no Chromium (set CHROMIUM_PATH or apt-get install chromium)');
  process.exit(0);
}

const tmp = tempDir('console-bench');
const { service, base } = await startEmbeddedService(tmp.dir);
const demo = await quickstart(service.registry, 'bench');
const now = Date.now();
for (let i = 0; i < 60; i++) {
  await fetch(`${base}/device/${demo.deviceId}/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${demo.deviceToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ temperature: { value: 20 + Math.sin(i / 5), at: new Date(now - (60 - i) * 50_000).toISOString() } }),
  });
}
await new Promise((resolve) => setTimeout(resolve, 1500));
const browser = await launchChromium(path);

interface Sample { bytes: number; requests: number; ms: number }

/** Loads `url` in `page`, waits for `ready`, and counts what crossed the network (CDP encodedDataLength). */
async function measure(context: BrowserContext, page: Page, url: string, ready: (page: Page) => Promise<unknown>): Promise<Sample> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  let requests = 0;
  cdp.on('Network.loadingFinished', (event: { encodedDataLength: number }) => { bytes += event.encodedDataLength; requests++; });
  await page.goto(url);
  await ready(page);
  const ms = await page.evaluate(() => performance.now());
  // Requests still finishing (none expected once ready) are counted too.
  await page.waitForTimeout(200);
  await cdp.detach();
  return { bytes, requests, ms };
}

const signedIn = (context: BrowserContext) => context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), demo.userToken);

const scenarios: Array<{ name: string; url: string; signedIn: boolean; ready: (page: Page) => Promise<unknown> }> = [
  { name: 'baseline /health', url: `${base}/health`, signedIn: false, ready: (p) => p.waitForLoadState('load') },
  { name: 'console, signed out', url: `${base}/console/`, signedIn: false, ready: (p) => p.getByLabel('User or partner token').waitFor() },
  { name: 'console, device page', url: `${base}/console/#/device/${demo.deviceId}`, signedIn: true, ready: (p) => p.locator('td.value[data-asset=temperature]').filter({ hasText: /\d/ }).waitFor() },
  { name: 'console, asset page + chart', url: `${base}/console/#/device/${demo.deviceId}/asset/temperature`, signedIn: true, ready: (p) => p.locator('[data-testid=chart] canvas').waitFor() },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results: Record<string, { cold: Sample[]; warm: Sample[] }> = {};
for (let run = 0; run < runs; run++) {
  for (const s of scenarios) {
    const context = await browser.newContext();
    if (s.signedIn) await signedIn(context);
    const page = await context.newPage();
    const cold = await measure(context, page, s.url, s.ready);
    const warmPage = await context.newPage();
    const warm = await measure(context, warmPage, s.url, s.ready);
    await context.close();
    (results[s.name] ??= { cold: [], warm: [] }).cold.push(cold);
    results[s.name].warm.push(warm);
  }
}

const baseline = median(results[scenarios[0].name].cold.map((s) => s.ms));
console.log(`console first load, median of ${runs} runs, Chromium ${browser.version()}, loopback`);
console.log('scenario                        cold KiB  requests  cold ms  ×baseline   warm KiB  warm ms');
for (const s of scenarios) {
  const r = results[s.name];
  const coldMs = median(r.cold.map((x) => x.ms));
  console.log([
    s.name.padEnd(30),
    (median(r.cold.map((x) => x.bytes)) / 1024).toFixed(1).padStart(9),
    String(median(r.cold.map((x) => x.requests))).padStart(9),
    coldMs.toFixed(0).padStart(8),
    (coldMs / baseline).toFixed(1).padStart(10),
    (median(r.warm.map((x) => x.bytes)) / 1024).toFixed(1).padStart(10),
    median(r.warm.map((x) => x.ms)).toFixed(0).padStart(8),
  ].join(' '));
}

await browser.close();
await service.stop();
tmp.remove();
