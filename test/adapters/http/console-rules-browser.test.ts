/**
 * The console's rules page in real headless Chromium, against the whole service on its embedded
 * defaults: rules created from the form for each kind of condition are listed as the API stores
 * them; a rule the API refuses (a threshold on a boolean, a bad duration) shows the API's message
 * naming the field; deletion. An alarm a state raises shows on the ground's page (a count, a badge
 * on its device) and on the alarms page, where it is acknowledged and cleared. The count and the
 * badges follow the ground's alarm changes live: a second alarm, and its clearing, show without a
 * reload, well before the page would reload them.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir } from '../../support/tmp.ts';

interface World {
  service: Service;
  base: string;
  browser: Browser;
  remove(): void;
  token: string;
  groundId: string;
  /** The freezer the first test creates. */
  device: { id: string; token: string };
}

const test = suite<World>('console rules page in Chromium');

async function api(w: World, method: string, path: string, json?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${w.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${w.token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

withChromium('console rules browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-rules');
    w.remove = t.remove;
    const { service, base } = await startEmbeddedService({ dir: t.dir });
    Object.assign(w, { service, base });
    const user = await service.registry.createUser({ name: 'Ana' });
    const ground = await service.registry.createGround({ name: 'Cold store', userId: user.entity.id });
    w.token = user.token;
    w.groundId = ground.id;
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    w.remove?.();
  });

  test('create rules from the form, listed as stored; refusals name the field; delete', async (w) => {
    const made = await api(w, 'POST', `/ground/${w.groundId}/devices`, { name: 'freezer-1', assets: [
      { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
      { name: 'door', is: 'sensor', profile: { type: 'boolean' } },
    ] });
    assert.is(made.status, 201);
    w.device = made.body;
    const context = await w.browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/`);
    await page.getByLabel('User or partner token').fill(w.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Cold store' }).click();
    await page.getByRole('link', { name: 'Rules' }).click();
    await page.getByText('No rule yet.').waitFor();

    await page.getByLabel('Name', { exact: true }).fill('too warm');
    await page.getByLabel('Asset', { exact: true }).fill('temperature');
    await page.getByLabel('Threshold').fill('-18');
    await page.getByLabel(/^For/).fill('PT5M');
    await page.getByLabel('Severity').selectOption('critical');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.locator('[data-testid=rules] tbody tr').first().waitFor();

    await page.getByLabel('Name', { exact: true }).fill('door silent');
    await page.getByLabel('Asset', { exact: true }).fill('door');
    await page.getByLabel('Condition').selectOption('silentFor');
    await page.getByLabel('Silence').fill('PT1H');
    await page.getByLabel('Severity').selectOption('warning');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.locator('[data-testid=rules] tbody tr').nth(1).waitFor();

    const stored = (await api(w, 'GET', `/ground/${w.groundId}/rules`)).body.items;
    assert.equal(stored.map((r: any) => [r.name, r.asset, r.condition, r.for, r.severity]), [
      ['too warm', 'temperature', { above: -18 }, 'PT5M', 'critical'],
      ['door silent', 'door', { silentFor: 'PT1H' }, undefined, 'warning'],
    ]);
    assert.equal(await page.getByTestId('condition').allInnerTexts(), ['above -18', 'silent for PT1H']);

    // A threshold on a boolean: the API's refusal, naming the field.
    const direct = await api(w, 'POST', `/ground/${w.groundId}/rules`, { name: 'x', asset: 'door', condition: { above: 1 }, severity: 'info' });
    assert.is(direct.status, 422);
    await page.getByLabel('Name', { exact: true }).fill('nonsense');
    await page.getByLabel('Asset', { exact: true }).fill('door');
    await page.getByLabel('Condition').selectOption('above');
    await page.getByLabel('Threshold').fill('1');
    await page.getByRole('button', { name: 'Create rule' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /VALIDATION_FAILED/);
    assert.match(await alert.innerText(), /body\.condition: a threshold needs a number or integer asset/);
    await page.getByLabel(/^For/).fill('P400D');
    await page.getByLabel('Asset', { exact: true }).fill('temperature');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.getByRole('alert').filter({ hasText: 'body.for: must be at most a year (P366D)' }).waitFor();
    await screenshot(page, 'console-rules');
    assert.equal(await accessibilityProblems(page), [], 'rules page: labels, names and contrast');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator(`tr[data-rule="${stored[0].id}"]`).getByRole('button', { name: 'Delete' }).click();
    await page.locator(`tr[data-rule="${stored[0].id}"]`).waitFor({ state: 'detached' });
    assert.is((await api(w, 'GET', `/rules/${stored[0].id}`)).status, 404);
    assert.equal(errors, []);
    await context.close();
  });

  test('an alarm: counted on the ground, badged on its device, acknowledged and cleared on the alarms page', async (w) => {
    const rule = await api(w, 'POST', `/ground/${w.groundId}/rules`, { name: 'door open', asset: 'door', condition: { equals: true }, severity: 'critical' });
    assert.is(rule.status, 201);
    const sent = await fetch(`${w.base}/device/${w.device.id}/state`, { method: 'PUT', headers: { authorization: `Bearer ${w.device.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ door: { value: true } }) });
    assert.is(sent.status, 202);
    const context = await w.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${w.base}/console/`);
    await page.getByLabel('User or partner token').fill(w.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Cold store' }).click();
    await page.getByTestId('alarms-link').filter({ hasText: 'Alarms (1 active)' }).waitFor({ timeout: 15_000 });
    assert.is(await page.getByTestId('alarm-badge').innerText(), '1 alarm');
    await page.getByTestId('alarms-link').click();
    const row = page.locator('[data-testid=alarms] tbody tr');
    await row.first().waitFor();
    assert.is(await row.count(), 1);
    assert.match(await row.first().innerText(), /critical\s+door open\s+freezer-1\s+door\s+active/);
    await row.first().getByRole('button', { name: 'Acknowledge' }).click();
    await page.getByTestId('alarm-acknowledged').filter({ hasText: /^yes/ }).waitFor();
    await screenshot(page, 'console-alarms');
    assert.equal(await accessibilityProblems(page), [], 'alarms page: labels, names and contrast');
    await row.first().getByRole('button', { name: 'Clear' }).click();
    await page.getByText('No alarm.').waitFor();
    await page.getByRole('button', { name: 'All' }).click();
    await page.getByTestId('alarm-status').filter({ hasText: 'cleared' }).waitFor();
    const stored = (await api(w, 'GET', `/ground/${w.groundId}/alarms`)).body.items;
    assert.equal(stored.map((a: any) => [a.status, a.acknowledged, a.ruleId]), [['cleared', true, rule.body.id]]);
    // Live: back on the ground's page, another rule raises an alarm, then a state clears it; the
    // page follows within seconds (it reloads the alarms only every 30 s).
    await page.getByRole('link', { name: 'Devices' }).click();
    await page.getByTestId('alarms-link').filter({ hasText: /^Alarms$/ }).waitFor({ timeout: 10_000 });
    const warm = await api(w, 'POST', `/ground/${w.groundId}/rules`, { name: 'warm', asset: 'temperature', condition: { above: -10 }, severity: 'major', devices: [w.device.id] });
    assert.is(warm.status, 201);
    const state = (value: number) => fetch(`${w.base}/device/${w.device.id}/state`, { method: 'PUT', headers: { authorization: `Bearer ${w.device.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ temperature: { value } }) });
    const raisedAt = Date.now();
    assert.is((await state(-5)).status, 202);
    await page.getByTestId('alarms-link').filter({ hasText: 'Alarms (1 active)' }).waitFor({ timeout: 10_000 });
    assert.is(await page.getByTestId('alarm-badge').innerText(), '1 alarm');
    await screenshot(page, 'console-ground-live-alarm');
    assert.is((await state(-20)).status, 202);
    await page.getByTestId('alarms-link').filter({ hasText: /^Alarms$/ }).waitFor({ timeout: 10_000 });
    assert.is(await page.getByTestId('alarm-badge').count(), 0);
    assert.ok(Date.now() - raisedAt < 25_000, 'followed live, not by the 30 s reload');
    assert.equal(errors, []);
    await context.close();
  });
});

test.run();
