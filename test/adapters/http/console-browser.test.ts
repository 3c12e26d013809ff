/**
 * The web console in real headless Chromium against the whole service on its embedded
 * defaults: signing in, the history chart, a command reaching an MQTT client, a command to a LoRa
 * actuator reaching (a local stand-in of) The Things Stack's downlink queue, a partner's
 * activation redeemed by a user, the API's problem+json messages shown for bad input, and a
 * phone-width screen. Screenshots are saved under test-artifacts/.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { FakeTts } from '../../support/fakeTts.ts';
import { activateOverHttp } from '../../support/lpwanStack.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface World {
  service: Service;
  base: string;
  browser: Browser;
  remove(): void;
  user: { id: string; token: string };
  partner: { id: string; token: string };
  groundId: string;
  tts: FakeTts;
}

const TTS_API_KEY = 'NNSXS.CONSOLEKEY.0123456789ABCDEF';

const test = suite<World>('console in Chromium');

async function api(w: World, method: string, path: string, token: string, json?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${w.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A device with the given assets in the user's ground, and its token. */
async function device(w: World, name: string, assets: unknown[]): Promise<{ id: string; token: string }> {
  const created = await api(w, 'POST', `/ground/${w.groundId}/devices`, w.user.token, { name, assets });
  assert.is(created.status, 201, JSON.stringify(created.body));
  return created.body;
}

async function signIn(w: World, context: BrowserContext, token: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors = pageErrors(page);
  await page.goto(`${w.base}/console/`);
  await page.getByLabel('User or partner token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { page, errors };
}

/** The detail the API itself answers for a request, as the console words it. */
function apiMessage(problem: { detail?: string; title?: string; errors?: Array<{ path: string; message: string }> }): string {
  return problem.detail ?? problem.title ?? '';
}

withChromium('console browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console');
    w.remove = t.remove;
    w.tts = await FakeTts.start(TTS_API_KEY);
    const { service, base } = await startEmbeddedService({
      dir: t.dir,
      applications: [{ networkId: 'thethingsnetwork', applicationId: 'console-farm', secret: 'console-tts-webhook-secret-01', downlink: { baseUrl: w.tts.base, webhookId: 'fleetstream', apiKey: TTS_API_KEY, fPort: 3 } }],
    });
    Object.assign(w, { service, base });
    const user = await service.registry.createUser({ name: 'Ana' });
    const partner = await service.registry.createPartner({ name: 'Acme' });
    const ground = await service.registry.createGround({ name: 'Greenhouse', userId: user.entity.id });
    w.user = { id: user.entity.id, token: user.token };
    w.partner = { id: partner.entity.id, token: partner.token };
    w.groundId = ground.id;
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    await w.tts?.close();
    w.remove?.();
  });

  test('sign in: a wrong token shows the API\'s 401 message; the token lives in sessionStorage, never in a URL', async (w) => {
    const context = await w.browser.newContext();
    const urls: string[] = [];
    context.on('request', (r) => urls.push(r.url()));
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/`);
    const forged = `fsu_${'A'.repeat(43)}`;
    const direct = await api(w, 'GET', '/me', forged);
    assert.is(direct.status, 401);
    await page.getByLabel('User or partner token').fill(forged);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.is(await alert.innerText(), `UNAUTHORIZED ${direct.body.detail}`);
    await page.getByLabel('User or partner token').fill(w.user.token);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'Greenhouse' }).waitFor();
    assert.ok(await page.getByText('user Ana').isVisible());
    assert.is(await page.evaluate(() => sessionStorage.getItem('fleetstream.token')), w.user.token);
    assert.is(await page.evaluate(() => localStorage.length), 0);
    assert.equal(await context.cookies(), []);
    assert.ok(urls.length > 5);
    for (const url of urls) assert.not.ok(url.includes(w.user.token), `token in a URL: ${url}`);
    await screenshot(page, 'console-grounds');
    await page.reload();
    await page.getByRole('link', { name: 'Greenhouse' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('User or partner token').waitFor();
    assert.is(await page.evaluate(() => sessionStorage.getItem('fleetstream.token')), null);
    assert.equal(errors, []);
    await context.close();
  });

  test('the asset page draws the history: raw points for an hour, hourly aggregates for a week, drag to zoom', async (w) => {
    const d = await device(w, 'weather-station', [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }]);
    const now = Date.now();
    const states: Record<string, unknown>[] = [];
    for (let i = 0; i < 48; i++) states.push({ temperature: { value: Math.round((20 + 4 * Math.sin(i / 4)) * 100) / 100, at: new Date(now - (48 - i) * 70_000).toISOString() } });
    for (let i = 0; i < 6; i++) states.push({ temperature: { value: 10 + i, at: new Date(now - (i + 2) * 86_400_000).toISOString() } });
    for (const body of states) assert.is((await api(w, 'PUT', `/device/${d.id}/state`, d.token, body)).status, 202);
    await waitFor(async () => (await api(w, 'GET', `/device/${d.id}/asset/temperature/states?limit=1000`, w.user.token)).body.items.length === states.length, 15_000, 'states stored');
    const context = await w.browser.newContext({ viewport: { width: 1100, height: 900 } });
    const { page, errors } = await signIn(w, context, w.user.token);
    await page.goto(`${w.base}/console/#/device/${d.id}/asset/temperature`);
    const canvas = page.locator('[data-testid=chart] canvas');
    await canvas.waitFor();
    assert.match(await page.getByTestId('window').innerText(), /raw points/);
    assert.is(await page.locator('[data-testid=history] tbody tr').count(), 48);
    const inked = await canvas.evaluate((c: any) => {
      const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
      return n;
    });
    assert.ok(inked > 500, `the chart drew a line (${inked} pixels)`);
    await screenshot(page, 'console-asset-chart');
    await page.getByRole('button', { name: 'Last 7 d' }).click();
    await page.getByText('hour aggregates').waitFor();
    assert.ok(await page.locator('[data-testid=history] th', { hasText: 'Avg' }).isVisible());
    await page.getByRole('button', { name: 'Last 1 h' }).click();
    await page.getByText('raw points').waitFor();
    await canvas.waitFor();
    const before = await page.getByTestId('window').innerText();
    const over = await page.locator('[data-testid=chart] .u-over').boundingBox();
    assert.ok(over);
    await page.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    await waitFor(async () => (await page.getByTestId('window').innerText()) !== before, 5000, 'a zoomed window');
    const historyRows = () => page.locator('[data-testid=history] tbody tr').count();
    // While a window loads its table is empty (no rows of the window before): wait for it to load.
    const loading = page.getByText('Loading this window…');
    await waitFor(async () => (await loading.count()) === 0 && (await historyRows()) < 48, 5000, 'fewer rows in the zoomed window');
    assert.ok((await historyRows()) > 5, 'the zoomed window still holds the points dragged over');
    await screenshot(page, 'console-asset-zoomed');
    assert.equal(errors, []);
    await context.close();
  });

  test('a command from the form reaches an MQTT client on the device\'s topic; its lifecycle shows delivered; bad values show the reason', async (w) => {
    const d = await device(w, 'pump', [
      { name: 'speed', is: 'actuator', profile: { type: 'integer', minimum: 0, maximum: 100 } },
      { name: 'program', is: 'actuator', profile: { type: 'object', properties: { level: { type: 'integer', maximum: 9 } }, required: ['level'] } },
    ]);
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${w.service.mqttPort}`, { username: d.token, password: d.token, reconnectPeriod: 0 });
    const received: Array<{ topic: string; body: any }> = [];
    client.on('message', (topic, payload) => received.push({ topic, body: JSON.parse(payload.toString()) }));
    await client.subscribeAsync(`device/${d.id}/asset/+/command`, { qos: 1 });
    const context = await w.browser.newContext();
    try {
      const { page, errors } = await signIn(w, context, w.user.token);
      await page.goto(`${w.base}/console/#/device/${d.id}/asset/speed`);
      const value = page.getByLabel('Value');
      await value.fill('500');
      await page.getByRole('button', { name: 'Send' }).click();
      assert.match(await page.getByRole('alert').innerText(), /value: must be at most 100/);
      // The console checks scalars only: an object's properties are left to the API, whose message is shown as is.
      const direct = await api(w, 'PUT', `/device/${d.id}/asset/program/command`, w.user.token, { value: { level: 12 } });
      assert.is(direct.status, 422);
      await page.goto(`${w.base}/console/#/device/${d.id}/asset/program`);
      await page.getByLabel('Value').fill('{"level": 12}');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByText(apiMessage(direct.body)).waitFor();
      assert.match(await page.getByRole('alert').innerText(), new RegExp(direct.body.code));
      await page.getByLabel('Value').fill('{"level": 12');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByRole('alert').filter({ hasText: 'value: must be JSON' }).waitFor();
      await page.goto(`${w.base}/console/#/device/${d.id}/asset/speed`);
      await value.fill('45');
      await page.getByRole('button', { name: 'Send' }).click();
      await waitFor(() => received.length > 0, 10_000, 'the command on MQTT');
      assert.is(received[0].topic, `device/${d.id}/asset/speed/command`);
      assert.is(received[0].body.value, 45);
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'delivered shown');
      assert.ok(await page.locator('.lifecycle li', { hasText: 'sent' }).count() >= 1, 'the lifecycle lists sent');
      await screenshot(page, 'console-command');
      assert.equal(errors, []);
    } finally {
      await client.endAsync();
      await context.close();
    }
  });

  test('a command from the form to a LoRa actuator reaches The Things Stack as a downlink holding that asset; its lifecycle shows delivered', async (w) => {
    const relay = {
      assets: [{ name: 'valve', is: 'actuator', profile: { type: 'boolean' } }, { name: 'moisture', is: 'sensor', profile: { type: 'number' } }],
      payload: { format: 'binary', conversion: { sense: [{ asset: 'moisture', value: { byte: 0 } }], actuate: [{ const: 0x01, field: { byte: 0 } }, { asset: 'valve', field: { byte: 1, type: 'boolean' } }] } },
    };
    const d = await activateOverHttp(w.base, w.service.registry, relay, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED00C0501', applicationId: 'console-farm' } }, 'console-relay-1');
    const context = await w.browser.newContext();
    try {
      const { page, errors } = await signIn(w, context, d.userToken);
      await page.goto(`${w.base}/console/#/device/${d.deviceId}/asset/valve`);
      await page.getByLabel('Value (on / off)').check();
      await page.getByRole('button', { name: 'Send' }).click();
      await waitFor(() => w.tts.queued.length > 0, 10_000, 'the downlink at The Things Stack');
      const pushed = w.tts.queued.at(-1)!;
      assert.equal([pushed.applicationId, pushed.deviceId, pushed.fPort, pushed.bytes], ['console-farm', 'eui-70b3d57ed00c0501', 3, [0x01, 0xff]]);
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'delivered shown');
      const shownId = await page.locator('.lifecycle code').innerText();
      assert.equal(pushed.correlationIds, [`fleetstream:command:${shownId}`], 'the command the form sent');
      // The history is written in batches (docs/mqtt.md): it may lag the live stream the page follows.
      let listed: any;
      await waitFor(async () => (listed = (await api(w, 'GET', `/device/${d.deviceId}/commands`, d.userToken)).body.items[0])?.status === 'delivered', 10_000, 'delivered listed');
      assert.equal([listed.id, listed.kind, listed.asset, listed.value, listed.status], [shownId, 'asset', 'valve', true, 'delivered']);
      await screenshot(page, 'console-command-lora');
      // On a network that takes no downlinks the form shows the API's refusal; nothing is queued.
      const loriot = await activateOverHttp(w.base, w.service.registry, relay, { networkId: 'loriot', data: { devEui: '0004A30B00C05020' } }, 'console-relay-2');
      const direct = await api(w, 'PUT', `/device/${loriot.deviceId}/asset/valve/command`, loriot.userToken, { value: true });
      assert.equal([direct.status, direct.body.code], [501, 'NO_DOWNLINK']);
      const other = await signIn(w, context, loriot.userToken);
      await other.page.goto(`${w.base}/console/#/device/${loriot.deviceId}/asset/valve`);
      await other.page.getByRole('button', { name: 'Send' }).click();
      await other.page.getByText(apiMessage(direct.body)).waitFor();
      assert.match(await other.page.getByRole('alert').innerText(), /NO_DOWNLINK/);
      assert.equal((await api(w, 'GET', `/device/${loriot.deviceId}/commands`, loriot.userToken)).body.items, []);
      assert.is(w.tts.queued.length, 1, 'one downlink: the thethingsnetwork device\'s');
      assert.equal([...errors, ...other.errors], []);
    } finally {
      await context.close();
    }
  });

  test('a partner publishes a device type and creates an activation; a user redeems it into a ground choosing an option', async (w) => {
    const context = await w.browser.newContext();
    const { page, errors } = await signIn(w, context, w.partner.token);
    await page.getByRole('link', { name: 'Device types' }).click();
    await page.getByLabel('Name', { exact: true }).fill('tracker');
    await page.getByLabel('Title', { exact: true }).fill('GPS tracker');
    await page.getByRole('button', { name: 'Create the device type' }).click();
    await page.getByRole('link', { name: 'tracker' }).waitFor();
    await page.getByRole('button', { name: 'Publish a version' }).click();
    await page.getByText(`Published ${w.partner.id}/tracker:1.`).waitFor();
    await page.getByRole('link', { name: 'Activations' }).click();
    await page.getByLabel('Hardware id', { exact: true }).last().fill('0004A30B001C0530');
    await page.locator('input[name="description"]').fill('blue van');
    await page.locator('select[name="o0.type"]').selectOption(`${w.partner.id}/tracker`);
    await page.locator('select[name="o0.network"]').selectOption('orangebe');
    await page.locator('input[name="o0.description"]').fill('mobile');
    await page.getByRole('button', { name: 'Add an option' }).click();
    await page.locator('select[name="o1.type"]').selectOption(`${w.partner.id}/tracker`);
    await page.locator('select[name="o1.network"]').selectOption('thethingsnetwork');
    await page.locator('input[name="o1.description"]').fill('The Things Network');
    await page.locator('input[name="o1.data.devEui"]').fill('0004A30B001C0530');
    await page.locator('input[name="o1.data.applicationId"]').fill('fleet');
    await page.getByRole('button', { name: 'Create activation' }).click();
    const code = await page.getByTestId('activation-code').innerText();
    assert.match(code, /^[0-9A-Z]{16}$/);
    await page.locator('[data-testid=activations] td', { hasText: 'blue van' }).waitFor();
    const stored = await api(w, 'GET', `/partner/${w.partner.id}/activations/${code}`, w.partner.token);
    assert.equal(stored.body.options.map((o: { network: { networkId: string } }) => o.network.networkId), ['orangebe', 'thethingsnetwork']);
    await page.locator('input[name="hardware"]').fill('0004A30B001C0530');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByText(`Code ${code}, unused.`).waitFor();
    await screenshot(page, 'console-activations');
    assert.equal(await accessibilityProblems(page), [], 'activations page: labels, names and contrast');
    const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
    assert.ok(width <= 1280, `activations page fits the window: ${width} px`);
    await page.getByRole('button', { name: 'Sign out' }).click();

    await page.getByLabel('User or partner token').fill(w.user.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Activate a device' }).click();
    await page.getByLabel('Activation code').fill(code.toLowerCase().replace(/(.{4})(?!$)/g, '$1-'));
    await page.getByRole('button', { name: 'Show its options' }).click();
    await page.getByRole('radio', { name: /The Things Network/ }).check();
    await page.getByLabel('Ground').selectOption({ label: 'Greenhouse' });
    await screenshot(page, 'console-activate');
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    const token = await page.getByTestId('shown-token').innerText();
    assert.match(token, /^fsd_/);
    const after = await api(w, 'GET', `/partner/${w.partner.id}/activations/${code}`, w.partner.token);
    assert.is(after.body.status, 'used');
    assert.is(after.body.activatedOptionId, stored.body.options[1].id, 'the option chosen in the console');
    const activated = await api(w, 'GET', `/device/${after.body.activatedDeviceId}`, w.user.token);
    assert.is(activated.body.groundId, w.groundId);
    assert.is(activated.body.network.networkId, 'thethingsnetwork');
    // Redeeming the same code again: the API's own answer is shown.
    await page.getByLabel('Activation code').fill(code);
    await page.getByRole('button', { name: 'Show its options' }).click();
    assert.match(await page.getByRole('alert').innerText(), /NOT_FOUND.*no unused activation with that code/s);
    assert.equal(errors, []);
    await context.close();
  });

  test('a partner filters activations by status and hardware id, changes and deletes one, and reads the networks table', async (w) => {
    await api(w, 'PUT', `/partner/${w.partner.id}/device-types/meter`, w.partner.token, { assets: [{ name: 'energy', is: 'sensor', profile: { type: 'number' } }] });
    const make = async (hw: string) => (await api(w, 'POST', `/partner/${w.partner.id}/activations`, w.partner.token, {
      description: `meter ${hw}`, hardware: { id: hw }, options: [{ device: { type: `${w.partner.id}/meter` }, network: { networkId: 'net8', data: {} } }],
    })).body as { code: string };
    const keep = await make('METER-1');
    const gone = await make('METER-2');
    const context = await w.browser.newContext();
    const { page, errors } = await signIn(w, context, w.partner.token);
    const rows = page.locator('[data-testid=activations] tbody tr');
    await rows.filter({ hasText: 'METER-2' }).waitFor();
    await page.locator('form.toolbar select[name=status]').selectOption('unused');
    await page.locator('form.toolbar input[name=hardwareId]').fill('METER-1');
    await page.getByRole('button', { name: 'Filter' }).click();
    await waitFor(async () => (await rows.count()) === 1 && (await rows.first().innerText()).includes(keep.code), 5000, 'one row: METER-1');
    // Change: the form fills in with the activation's description and options; saving replaces them, the code stays.
    await rows.first().getByRole('button', { name: 'Change' }).click();
    const form = page.locator('section[aria-labelledby=new-activation] form');
    assert.is(await form.locator('input[name=description]').inputValue(), 'meter METER-1');
    assert.ok((await form.locator('select[name="o0.type"]').inputValue()).startsWith(`${w.partner.id}/meter`), 'the option\'s device type is filled in');
    await form.locator('input[name=description]').fill('meter in the basement');
    await form.getByRole('button', { name: 'Add an option' }).click();
    await form.locator('input[name="o1.description"]').fill('second meter profile');
    await form.locator('select[name="o1.type"]').selectOption(`${w.partner.id}/meter`);
    // net8 is stored under its network's own id, which the first option's select shows.
    await form.locator('select[name="o1.network"]').selectOption(await form.locator('select[name="o0.network"]').inputValue());
    await screenshot(page, 'console-activation-change');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await rows.filter({ hasText: 'meter in the basement' }).waitFor();
    const changed = (await api(w, 'GET', `/partner/${w.partner.id}/activations/${keep.code}`, w.partner.token)).body as { description: string; options: Array<{ description: string; device: { type: string } }> };
    assert.is(changed.description, 'meter in the basement');
    assert.is(changed.options.length, 2, 'the options were replaced by the two in the form');
    assert.is(changed.options[1].description, 'second meter profile');
    assert.ok(changed.options.every((o) => o.device.type.startsWith(`${w.partner.id}/meter`)), JSON.stringify(changed.options));
    assert.ok(await page.getByRole('heading', { name: 'Create an activation' }).isVisible(), 'the form is back to creating');
    await page.locator('form.toolbar input[name=hardwareId]').fill('METER-2');
    await page.getByRole('button', { name: 'Filter' }).click();
    await rows.filter({ hasText: gone.code }).waitFor();
    page.once('dialog', (dialog) => dialog.accept());
    await rows.first().getByRole('button', { name: 'Delete' }).click();
    await waitFor(async () => (await rows.count()) === 0, 5000, 'the deleted row gone');
    assert.is((await api(w, 'GET', `/partner/${w.partner.id}/activations/${gone.code}`, w.partner.token)).status, 404);
    await page.getByRole('link', { name: 'Networks' }).click();
    await page.getByRole('rowheader', { name: 'thethingsnetwork' }).waitFor();
    assert.is(await page.locator('tbody tr').count(), 8, 'spec §2.8: eight networks');
    assert.ok(await page.getByRole('row', { name: /tmobilenl .*imei, imsi/ }).isVisible());
    assert.equal(await accessibilityProblems(page), []);
    assert.equal(errors, []);
    await context.close();
  });

  test('bad input in the console\'s forms shows the API\'s problem+json message', async (w) => {
    const context = await w.browser.newContext();
    const { page, errors } = await signIn(w, context, w.user.token);
    await page.goto(`${w.base}/console/#/ground/${w.groundId}`);
    const badAsset = { name: 'bad/name', is: 'sensor', profile: { type: 'number' } };
    const direct = await api(w, 'POST', `/ground/${w.groundId}/devices`, w.user.token, { name: 'probe', assets: [badAsset] });
    assert.is(direct.status, 422);
    await page.getByLabel('Name', { exact: true }).fill('probe');
    await page.getByLabel('Asset name').fill('bad/name');
    await page.getByRole('button', { name: 'Create device' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const shown = await alert.innerText();
    assert.ok(shown.includes(direct.body.code), shown);
    assert.ok(shown.includes(apiMessage(direct.body)), `${shown} vs ${JSON.stringify(direct.body)}`);
    // A name far over the limit: refused by the API, nothing created, the message shown.
    await page.getByLabel('Asset name').fill('ok');
    await page.getByLabel('Name', { exact: true }).fill('\u202Eevil'.repeat(200));
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.getByRole('alert').filter({ hasText: 'VALIDATION_FAILED' }).waitFor();
    assert.match(await page.getByRole('alert').innerText(), /body\.name/);
    const devices = await api(w, 'GET', `/ground/${w.groundId}/devices`, w.user.token);
    assert.not.ok(devices.body.items.some((d: { name: string }) => d.name === 'probe' || d.name.includes('evil')));
    await screenshot(page, 'console-bad-input');
    // Markup in names and values is shown as text, never run (and the CSP would refuse it anyway).
    const hostile = '<img src=x onerror="globalThis.hacked=1">';
    const forged = await api(w, 'POST', `/ground/${w.groundId}/devices`, w.user.token, { name: 'markup', title: hostile, assets: [{ name: 'note', is: 'sensor', profile: { type: 'string' } }] });
    assert.is(forged.status, 201, JSON.stringify(forged.body));
    assert.is((await api(w, 'PUT', `/device/${forged.body.id}/state`, forged.body.token, { note: { value: '<script>globalThis.hacked=2</script>' } })).status, 202);
    await page.reload();
    await page.getByRole('link', { name: hostile }).waitFor();
    await page.getByRole('link', { name: hostile }).click();
    await page.locator('td.value[data-asset=note]', { hasText: '<script>' }).waitFor({ timeout: 10_000 });
    assert.is(await page.evaluate(() => (globalThis as any).hacked), undefined);
    assert.is(await page.locator('img[src=x]').count(), 0);
    assert.equal(errors, []);
    await context.close();
  });

  test('phone width (390 px): signing in by keyboard, pages fit the screen without sideways scrolling', async (w) => {
    const d = await device(w, 'phone-check', [{ name: 'humidity', is: 'sensor', profile: { type: 'number' } }, { name: 'valve', is: 'actuator', profile: { type: 'boolean' } }]);
    await api(w, 'PUT', `/device/${d.id}/state`, d.token, { humidity: { value: 61.5 } });
    const context = await w.browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/`);
    await page.keyboard.press('Tab');
    assert.is(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'token', 'the token field is the first stop');
    await page.keyboard.type(w.user.token);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'Greenhouse' }).waitFor();
    for (const route of [`#/ground/${w.groundId}`, `#/device/${d.id}`, `#/device/${d.id}/asset/valve`, '#/activate']) {
      await page.goto(`${w.base}/console/${route}`);
      await page.locator('h1').first().waitFor();
      await page.waitForTimeout(300);
      const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
      assert.ok(width <= 390, `${route}: ${width} px wide`);
      assert.equal(await accessibilityProblems(page), [], `${route}: labels, names and contrast`);
    }
    await page.goto(`${w.base}/console/#/device/${d.id}`);
    await page.locator('td.value[data-asset=humidity]', { hasText: '61.5' }).waitFor();
    await screenshot(page, 'console-phone-device');
    assert.equal(errors, []);
    await context.close();
  });
});

test.run();
