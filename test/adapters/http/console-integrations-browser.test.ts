/**
 * The console's integrations page in real headless Chromium, against the whole service on its
 * embedded defaults and a real webhook receiver on loopback: an integration created from the form
 * (its secret shown once, and it is the one that signs), a state delivered and counted on the page,
 * a test event, a failing receiver shown as failing with its error, disable and enable, a new
 * secret, the API's refusal of an internal destination, and deletion.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { specVerify, type SignedHeaders } from '../../support/webhookVerifier.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface Received { headers: SignedHeaders; body: string; events: Array<{ type: string; [k: string]: unknown }> }

interface World {
  service: Service;
  base: string;
  browser: Browser;
  remove(): void;
  user: { token: string };
  groundId: string;
  receiver: Server;
  hook: string;
  /** The status the receiver answers. */
  answer: number;
  received: Received[];
}

const test = suite<World>('console integrations page in Chromium');

async function api(w: World, method: string, path: string, token: string, json?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${w.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** The integration row's cell `testId`. */
function cell(page: Page, id: string, testId: string) {
  return page.locator(`tr[data-integration="${id}"] [data-testid="${testId}"]`);
}

withChromium('console integrations browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-integrations');
    w.remove = t.remove;
    w.answer = 200;
    w.received = [];
    w.receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        w.received.push({ headers: req.headers as unknown as SignedHeaders, body, events: JSON.parse(body).events });
        res.writeHead(w.answer, { 'content-type': 'text/plain' }).end(w.answer === 200 ? 'ok' : 'receiver is down for maintenance');
      });
    });
    await new Promise<void>((resolve) => w.receiver.listen(0, '127.0.0.1', resolve));
    w.hook = `http://127.0.0.1:${(w.receiver.address() as AddressInfo).port}/hook`;
    const { service, base } = await startEmbeddedService({ dir: t.dir, integrationsAllowHosts: ['127.0.0.1'], integrations: { batchLingerMs: 50 } });
    Object.assign(w, { service, base });
    const user = await service.registry.createUser({ name: 'Ana' });
    const ground = await service.registry.createGround({ name: 'Orchard', userId: user.entity.id });
    w.user = { token: user.token };
    w.groundId = ground.id;
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    await new Promise((resolve) => w.receiver?.close(resolve));
    w.remove?.();
  });

  test('create from the form, secret shown once and signing; delivered, test, failing, disable and enable, new secret, refusal, delete', async (w) => {
    const created = await api(w, 'POST', `/ground/${w.groundId}/devices`, w.user.token, { name: 'bed-4', assets: [{ name: 'moisture', is: 'sensor', profile: { type: 'number' } }] });
    assert.is(created.status, 201);
    const device: { id: string; token: string } = created.body;
    const context = await w.browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/`);
    await page.getByLabel('User or partner token').fill(w.user.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Orchard' }).click();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByText('No integration yet.').waitFor();

    // An internal destination: the API's refusal, shown with its code.
    const refused = await api(w, 'POST', `/ground/${w.groundId}/integrations`, w.user.token, { name: 'meta', kind: 'webhook', url: 'http://169.254.169.254/latest', events: ['state'] });
    assert.is(refused.status, 422);
    await page.getByLabel('Name', { exact: true }).fill('meta');
    await page.getByLabel('URL', { exact: true }).fill('http://169.254.169.254/latest');
    await page.getByRole('button', { name: 'Create integration' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), new RegExp(`^${refused.body.code}`));

    await page.getByLabel('Name', { exact: true }).fill('Irrigation planner');
    await page.getByLabel('URL', { exact: true }).fill(w.hook);
    await page.getByLabel('rejection', { exact: true }).check();
    await page.getByLabel(/^Extra headers/).fill('X-Api-Key: planner-key-1');
    await page.getByRole('button', { name: 'Create integration' }).click();
    const secret = (await page.getByTestId('shown-token').innerText()).trim();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    const listed = await api(w, 'GET', `/ground/${w.groundId}/integrations`, w.user.token);
    assert.is(listed.body.items.length, 1);
    const integration = listed.body.items[0];
    assert.equal(integration.events, ['state', 'rejection']);
    assert.equal(integration.headers, { 'x-api-key': 'planner-key-1' });
    assert.not.ok(JSON.stringify(listed.body).includes(secret), 'the secret is never listed');
    await cell(page, integration.id, 'status').filter({ hasText: 'active' }).waitFor();

    assert.is((await api(w, 'PUT', `/device/${device.id}/state`, device.token, { moisture: { value: 31.5 } })).status, 202);
    await waitFor(() => w.received.some((r) => r.events.some((e) => e.type === 'state' && e.value === 31.5)), 20_000, 'the state at the receiver');
    const delivery = w.received.find((r) => r.events.some((e) => e.type === 'state'))!;
    assert.ok(specVerify(secret, delivery.body, delivery.headers), 'signed with the secret the page showed');
    await cell(page, integration.id, 'delivered').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 15_000 });

    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'Send a test' }).click();
    await page.getByTestId('test-result').filter({ hasText: 'Test delivered (HTTP 200)' }).waitFor();
    const tested = w.received.at(-1)!;
    assert.is(tested.events[0].type, 'test');
    assert.ok(specVerify(secret, tested.body, tested.headers));

    // A receiver that fails: shown failing, with its status and the start of its answer.
    w.answer = 503;
    assert.is((await api(w, 'PUT', `/device/${device.id}/state`, device.token, { moisture: { value: 12 } })).status, 202);
    await cell(page, integration.id, 'status').filter({ hasText: 'failing' }).waitFor({ timeout: 20_000 });
    assert.match(await cell(page, integration.id, 'last-error').innerText(), /HTTP 503: receiver is down for maintenance/);
    assert.match(await cell(page, integration.id, 'failed').innerText(), /^[1-9]/);
    assert.match(await cell(page, integration.id, 'pending').innerText(), /^1\b/);
    await screenshot(page, 'console-integrations-failing');
    assert.equal(await accessibilityProblems(page), [], 'integrations page: labels, names and contrast');
    w.answer = 200;
    await waitFor(() => w.received.some((r) => r.events.some((e) => e.type === 'state' && e.value === 12)), 30_000, 'the retried state');
    await cell(page, integration.id, 'status').filter({ hasText: /^active$/ }).waitFor({ timeout: 15_000 });
    await cell(page, integration.id, 'pending').filter({ hasText: /^0$/ }).waitFor({ timeout: 15_000 });

    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'Disable' }).click();
    await cell(page, integration.id, 'status').filter({ hasText: 'disabled (manual)' }).waitFor();
    assert.is((await api(w, 'GET', `/integrations/${integration.id}`, w.user.token)).body.status, 'disabled');
    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'Enable' }).click();
    await cell(page, integration.id, 'status').filter({ hasText: /^active$/ }).waitFor();

    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'New secret' }).click();
    await page.getByText('New signing secret of Irrigation planner').waitFor();
    const rotated = (await page.getByTestId('shown-token').innerText()).trim();
    assert.match(rotated, /^whsec_/);
    assert.is.not(rotated, secret);
    const before = w.received.length;
    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'Send a test' }).click();
    await page.getByTestId('test-result').filter({ hasText: 'Test delivered' }).waitFor();
    const afterRotation = w.received.slice(before).find((r) => r.events[0]?.type === 'test')!;
    assert.ok(specVerify(rotated, afterRotation.body, afterRotation.headers), 'the new secret signs');
    assert.ok(specVerify(secret, afterRotation.body, afterRotation.headers), 'the previous one too, for its grace period');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator(`tr[data-integration="${integration.id}"]`).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No integration yet.').waitFor();
    assert.is((await api(w, 'GET', `/integrations/${integration.id}`, w.user.token)).status, 404);
    assert.equal(errors, []);
    await context.close();
  });
});

test.run();
