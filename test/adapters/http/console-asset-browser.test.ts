/**
 * The asset page in real headless Chromium against the whole service on its embedded defaults:
 * live values land on the asset and window on screen (another asset opened in the same tab, a
 * window in the past), windows are whole milliseconds after "Zoom out" and "◀ Earlier", a window
 * whose load failed shows none of the previous window's data, and the chart's time axis spans the
 * chosen window on whole-second ticks, and a command's status never goes back to a history read that
 * answers after the live stream has moved it on.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { createDeviceOverHttp, startEmbeddedService, type CreatedDevice } from '../../support/embeddedService.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface World { service: Service; base: string; browser: Browser; device: CreatedDevice; remove(): void }
const test = suite<World>('console asset page in Chromium');

const ASSETS = [
  { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
  { name: 'setpoint', is: 'actuator', profile: { type: 'number', minimum: 5, maximum: 30 } },
];

async function putState(w: World, body: Record<string, unknown>): Promise<void> {
  const reply = await fetch(`${w.base}/device/${w.device.id}/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${w.device.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.is(reply.status, 202, await reply.text());
}

async function stored(w: World, asset: string, value: number): Promise<void> {
  await waitFor(async () => {
    const reply = await fetch(`${w.base}/device/${w.device.id}/asset/${asset}/states?limit=1000`, { headers: { authorization: `Bearer ${w.device.userToken}` } });
    return ((await reply.json()) as { items: Array<{ value: unknown }> }).items.some((s) => s.value === value);
  }, 15_000, `${asset} ${value} stored`);
}

async function open(w: World, context: BrowserContext, asset: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors = pageErrors(page);
  await page.goto(`${w.base}/console/#/device/${w.device.id}/asset/${asset}`);
  await page.getByText('● live').waitFor({ timeout: 10_000 });
  return { page, errors };
}

async function newContext(w: World): Promise<BrowserContext> {
  const context = await w.browser.newContext({ viewport: { width: 1100, height: 900 } });
  await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), w.device.userToken);
  return context;
}

const historyValues = (page: Page) => page.locator('[data-testid=history] tbody td:nth-child(2)').allInnerTexts();

/** The window the page shows, as its element states it in epoch ms. */
async function shownWindow(page: Page): Promise<{ from: number; to: number }> {
  const label = page.getByTestId('window');
  return { from: Number(await label.getAttribute('data-from')), to: Number(await label.getAttribute('data-to')) };
}

/** Columns of the chart's canvas holding the first series' blue, as fractions of its width. */
function blueColumns(page: Page): Promise<number[]> {
  return page.locator('[data-testid=chart] canvas').evaluate((c: any) => {
    const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    const columns = new Set<number>();
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        if (data[i + 3] > 200 && data[i + 2] > 140 && data[i] < 60 && data[i + 1] < 130) columns.add(x / width);
      }
    }
    return [...columns].sort((a, b) => a - b);
  });
}

withChromium('console asset browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-asset');
    w.remove = t.remove;
    Object.assign(w, await startEmbeddedService(t.dir));
    w.device = await createDeviceOverHttp(w.service, w.base, ASSETS);
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    w.remove?.();
  });

  test('"Last 1 h" with 50 s of readings: the axis spans the hour, the line sits at its right end, ticks are whole minutes; a drag to seconds gives whole seconds', async (w) => {
    const now = Date.now();
    for (let i = 0; i < 6; i++) await putState(w, { temperature: { value: 20 + i / 10, at: new Date(now - 50_000 + i * 10_000).toISOString() } });
    await stored(w, 'temperature', 20.5);
    const context = await newContext(w);
    const { page, errors } = await open(w, context, 'temperature');
    const chart = page.getByTestId('chart');
    await chart.locator('canvas').waitFor();
    await waitFor(async () => (await chart.getAttribute('data-ticks')) !== null, 5000, 'the axis drawn');
    const window = await shownWindow(page);
    assert.is(window.to - window.from, 3_600_000, 'the window chosen: the last hour');
    assert.is(Number(await chart.getAttribute('data-from')), window.from, 'the axis starts where the window starts');
    assert.is(Number(await chart.getAttribute('data-to')), window.to, 'the axis ends where the window ends');
    const ticks = (await chart.getAttribute('data-ticks'))!.split(',').map(Number);
    assert.ok(ticks.length >= 3 && ticks.length <= 15, `a readable number of ticks: ${ticks.length}`);
    for (const t of ticks) assert.ok(t % 60_000 === 0 && t >= window.from && t <= window.to, `a whole minute inside the window: ${t}`);
    const columns = await blueColumns(page);
    assert.ok(columns.length > 0, 'the line is drawn');
    assert.ok(columns[0] > 0.9, `50 s of an hour sit at the right end of the plot, from ${columns[0].toFixed(3)} of its width`);
    assert.equal(await accessibilityProblems(page), [], 'asset page: labels, names and contrast');
    await screenshot(page, 'console-asset-window');

    // A drag over a few pixels: a window of seconds, still whole milliseconds, ticks on whole seconds.
    const over = (await chart.locator('.u-over').boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.99, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.997, over.y + over.height / 2, { steps: 3 });
    await page.mouse.up();
    await waitFor(async () => (await shownWindow(page)).to !== window.to, 5000, 'a zoomed window');
    const zoomed = await shownWindow(page);
    assert.ok(Number.isInteger(zoomed.from) && Number.isInteger(zoomed.to) && zoomed.to - zoomed.from < 60_000, JSON.stringify(zoomed));
    await waitFor(async () => Number(await chart.getAttribute('data-from')) === zoomed.from, 5000, 'the zoomed axis drawn');
    const fine = (await chart.getAttribute('data-ticks'))!.split(',').map(Number);
    assert.ok(fine.length >= 2 && fine.length <= 15, `ticks: ${fine.length}`);
    for (const t of fine) assert.ok(t % 1000 === 0, `a whole second, not a fraction: ${t}`);
    assert.equal(errors, []);
    await context.close();
  });

  test('live values go to the asset on screen: after opening another asset in the same tab, its table never gets the first asset\'s readings', async (w) => {
    const context = await newContext(w);
    const { page, errors } = await open(w, context, 'temperature');
    await page.evaluate((id: string) => { (globalThis as any).location.hash = `#/device/${id}/asset/setpoint`; }, w.device.id);
    await page.getByRole('heading', { name: /setpoint/ }).waitFor();
    await page.getByText('● live').waitFor({ timeout: 10_000 });
    await putState(w, { temperature: { value: 77.7 } });
    await putState(w, { setpoint: { value: 12.5 } });
    await page.locator('[data-testid=history] td', { hasText: '12.5' }).waitFor({ timeout: 10_000 });
    assert.not.ok((await historyValues(page)).includes('77.7'), `the set point's history holds no temperature: ${await historyValues(page)}`);
    assert.equal(errors, []);
    await context.close();
  });

  test('a window in the past gets no live values: after "◀ Earlier" a new reading is not appended to it', async (w) => {
    const context = await newContext(w);
    const { page, errors } = await open(w, context, 'temperature');
    const watcher = await open(w, context, 'temperature');
    await page.getByRole('button', { name: '◀ Earlier' }).click();
    await page.getByText('● live').waitFor();
    const past = await shownWindow(page);
    assert.ok(past.to < Date.now() - 60_000, 'a window that ended half an hour ago');
    await putState(w, { temperature: { value: 88.8 } });
    // The reading reached this tab's other page over the same live stream...
    await watcher.page.locator('[data-testid=history] td', { hasText: '88.8' }).waitFor({ timeout: 10_000 });
    await page.waitForTimeout(500);
    // ...and the page showing the past keeps only what lies in its window.
    assert.not.ok((await historyValues(page)).includes('88.8'), 'no live value in a past window');
    assert.equal([...errors, ...watcher.errors], []);
    await context.close();
  });

  test('"Zoom out" then "◀ Earlier" asks for whole milliseconds; a window whose load fails shows none of the previous window\'s data', async (w) => {
    await putState(w, { temperature: { value: 19.25 } });
    await stored(w, 'temperature', 19.25);
    const context = await newContext(w);
    const page = await context.newPage();
    const errors = pageErrors(page);
    const asked: Array<{ from: string; to: string; status: number }> = [];
    page.on('response', (r) => {
      const url = new URL(r.url());
      if (url.pathname.endsWith('/states')) asked.push({ from: url.searchParams.get('from')!, to: url.searchParams.get('to')!, status: r.status() });
    });
    const start = Date.now();
    await page.clock.setFixedTime(start);
    await page.goto(`${w.base}/console/#/device/${w.device.id}/asset/temperature`);
    await page.locator('[data-testid=history] td', { hasText: '19.25' }).waitFor();
    // An odd number of milliseconds later: half of the zoomed-out window is not a whole number.
    await page.clock.setFixedTime(start + 1001);
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await page.getByRole('button', { name: '◀ Earlier' }).click();
    await waitFor(() => asked.length >= 3, 5000, 'three windows asked for');
    for (const a of asked) {
      assert.match(a.from, /^\d+$/, `from in whole ms: ${a.from}`);
      assert.match(a.to, /^\d+$/, `to in whole ms: ${a.to}`);
      assert.is(a.status, 200, JSON.stringify(a));
    }
    const earlier = await shownWindow(page);
    assert.is(String(earlier.from), asked.at(-1)!.from, 'the label names the window asked for');

    // The next window's load fails: its label shows the error, not the window before.
    await page.getByRole('button', { name: 'Last 1 h' }).click();
    await page.locator('[data-testid=history] td', { hasText: '19.25' }).waitFor();
    await page.route('**/asset/temperature/states?*', (route) => route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, code: 'UNAVAILABLE', detail: 'the store is down' }) }));
    await page.getByRole('button', { name: '◀ Earlier' }).click();
    await page.getByRole('alert').filter({ hasText: 'the store is down' }).waitFor();
    assert.is(await page.locator('[data-testid=history] tbody tr').count(), 0, 'no row of the previous window');
    assert.is(await page.getByTestId('chart').count(), 0, 'no chart of the previous window');
    assert.equal(errors, []);
    await context.close();
  });

  test('a command to a device that is not connected says it waits for the device while queued; once the device listens it is delivered', async (w) => {
    const context = await newContext(w);
    const { page, errors } = await open(w, context, 'setpoint');
    await page.getByLabel('Value').fill('18');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('command-status').filter({ hasText: 'queued' }).waitFor();
    const waiting = page.getByTestId('command-waiting');
    await waiting.waitFor();
    assert.match(await waiting.innerText(), /Waiting for the device/);
    assert.equal(await accessibilityProblems(page), [], 'the waiting line: contrast');
    await screenshot(page, 'console-command-waiting');
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${w.service.mqttPort}`, { username: w.device.token, reconnectPeriod: 0 });
    try {
      await client.subscribeAsync(`device/${w.device.id}/asset/+/command`, { qos: 1 });
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'delivered shown');
      assert.is(await waiting.count(), 0, 'no longer waiting');
    } finally {
      await client.endAsync();
    }
    assert.equal(errors, []);
    await context.close();
  });

  test('a history read that answers after the stream said delivered does not put the status back to queued', async (w) => {
    const context = await newContext(w);
    const { page, errors } = await open(w, context, 'setpoint');
    // Every history read is held until the stream has carried the command to delivered, then
    // answered with what the history said when it was asked: queued.
    const held: Array<() => Promise<void>> = [];
    await page.route('**/commands?limit=20', async (route) => {
      const reply = await route.fetch();
      const body = (await reply.json()) as { items: Array<{ id: string; status: string }> };
      held.push(() => route.fulfill({ response: reply, json: body }));
    });
    await page.getByLabel('Value').fill('19');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('command-waiting').waitFor();
    await waitFor(() => held.length > 0, 5000, 'a history read under way');
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${w.service.mqttPort}`, { username: w.device.token, reconnectPeriod: 0 });
    try {
      await client.subscribeAsync(`device/${w.device.id}/asset/+/command`, { qos: 1 });
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'delivered shown from the stream');
      let answered = 0;
      page.on('requestfinished', (r) => { if (r.url().includes('/commands?limit=20')) answered++; });
      const released = held.length;
      for (const release of held.splice(0)) await release();
      await waitFor(() => answered === released, 5000, 'the held reads answered');
      await page.evaluate(() => new Promise((resolve) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(resolve))));
      assert.is(await page.getByTestId('command-status').innerText(), 'delivered', 'the stale answer is dropped');
      assert.is(await page.getByTestId('command-waiting').count(), 0, 'no longer waiting');
    } finally {
      await client.endAsync();
    }
    assert.equal(errors, []);
    await context.close();
  });
});

test.run();
