/**
 * A partner's device types and activations in real headless Chromium against the whole service on
 * its embedded defaults: saving a type's draft keeps (and edits) its payload format and conversion
 * script, publishing a version is an action of its own, an activation's device type is picked from
 * the partner's types and versions, and an activation code is never broken across lines.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface World { service: Service; base: string; browser: Browser; partner: { id: string; token: string }; remove(): void }
const test = suite<World>('console partner pages in Chromium');

const RELAY = {
  title: 'Valve relay',
  description: 'one valve, one moisture probe',
  assets: [{ name: 'valve', is: 'actuator', profile: { type: 'boolean' } }, { name: 'moisture', is: 'sensor', profile: { type: 'number' } }],
  payload: { format: 'binary', conversion: { sense: [{ asset: 'moisture', value: { byte: 0 } }], actuate: [{ const: 1, field: { byte: 0 } }, { asset: 'valve', field: { byte: 1, type: 'boolean' } }] } },
};

async function api(w: World, method: string, path: string, json?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${w.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${w.partner.token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function partnerPage(w: World, width = 1100): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const context = await w.browser.newContext({ viewport: { width, height: 900 } });
  await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), w.partner.token);
  const page = await context.newPage();
  return { page, errors: pageErrors(page), close: () => context.close() };
}

withChromium('console partner browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-partner');
    w.remove = t.remove;
    Object.assign(w, await startEmbeddedService(t.dir));
    const partner = await w.service.registry.createPartner({ name: 'Acme' });
    w.partner = { id: partner.entity.id, token: partner.token };
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    w.remove?.();
  });

  test('saving a device type\'s draft keeps its payload format and conversion script, edits them, and publishes nothing; "Publish a version" does', async (w) => {
    assert.is((await api(w, 'PUT', `/partner/${w.partner.id}/device-types/relay`, RELAY)).status, 201);
    const { page, errors, close } = await partnerPage(w);
    await page.goto(`${w.base}/console/#/device-types/relay`);
    const form = page.locator('section[aria-labelledby=draft] form');
    await form.waitFor();
    assert.is(await form.getByLabel('Payload format').inputValue(), 'binary', 'the draft\'s format shown');
    assert.equal(JSON.parse(await form.getByLabel(/Conversion script/).inputValue()), RELAY.payload.conversion, 'the draft\'s script shown');
    assert.is(await form.getByLabel('Description').inputValue(), RELAY.description);
    await form.getByLabel('Title').fill('Valve relay, rev B');
    await form.getByRole('button', { name: 'Save the draft' }).click();
    await page.getByText('Draft of relay saved; nothing published.').waitFor();
    let saved = (await api(w, 'GET', `/partner/${w.partner.id}/device-types/relay`)).body;
    assert.is(saved.draft.title, 'Valve relay, rev B');
    assert.equal(saved.draft.payload, RELAY.payload, 'format and script kept');
    assert.is(saved.draft.description, RELAY.description, 'description kept');
    assert.is(saved.versions.length, 0, 'saving publishes nothing');

    // The script edited in the form: the moisture byte moves.
    const script = { ...RELAY.payload.conversion, sense: [{ asset: 'moisture', value: { byte: 2 } }] };
    await form.getByLabel(/Conversion script/).fill(JSON.stringify(script, null, 2));
    await form.getByRole('button', { name: 'Save the draft' }).click();
    await waitFor(async () => (await api(w, 'GET', `/partner/${w.partner.id}/device-types/relay`)).body.draft.payload.conversion.sense[0].value.byte === 2, 5000, 'the edited script saved');

    // Bad input: the console's own message for text that is not JSON; the API's for a script that does not check.
    await form.getByLabel(/Conversion script/).fill('{"sense": [');
    await form.getByRole('button', { name: 'Save the draft' }).click();
    assert.match(await page.getByRole('alert').innerText(), /VALIDATION_FAILED.*body\.payload\.conversion: not JSON/s);
    const bogus = { sense: [{ asset: 'moisture', value: { byte: 'zero' } }] };
    // Asked of another type: a refusal here must not touch relay's draft either way.
    const direct = await api(w, 'PUT', `/partner/${w.partner.id}/device-types/probe`, { ...RELAY, payload: { format: 'binary', conversion: bogus } });
    assert.is(direct.status, 422);
    await form.getByLabel(/Conversion script/).fill(JSON.stringify(bogus));
    await form.getByRole('button', { name: 'Save the draft' }).click();
    await page.getByRole('alert').filter({ hasText: direct.body.code }).waitFor();
    saved = (await api(w, 'GET', `/partner/${w.partner.id}/device-types/relay`)).body;
    assert.is(saved.draft.payload.conversion.sense[0].value.byte, 2, 'a refused save changed nothing');

    await page.reload();
    await page.getByRole('button', { name: 'Publish a version' }).click();
    await page.getByText(`Published ${w.partner.id}/relay:1.`).waitFor();
    await page.getByTestId('versions').getByText(`${w.partner.id}/relay:1`).waitFor();
    const v1 = (await api(w, 'GET', `/partner/${w.partner.id}/device-types/relay/versions/1`)).body;
    assert.equal(v1.definition?.payload ?? v1.payload, { format: 'binary', conversion: script }, JSON.stringify(v1));
    assert.equal(await accessibilityProblems(page), [], 'device types page: labels, names and contrast');
    await screenshot(page, 'console-device-type');
    assert.equal(errors, []);
    await close();
  });

  test('an activation\'s device type is picked from the partner\'s types and versions; its code stays in one piece on a phone and selects whole', async (w) => {
    await api(w, 'PUT', `/partner/${w.partner.id}/device-types/meter`, { title: 'Energy meter', assets: [{ name: 'energy', is: 'sensor', profile: { type: 'number' } }] });
    const { page, errors, close } = await partnerPage(w, 360);
    await page.goto(`${w.base}/console/#/activations`);
    const picker = page.locator('select[name="o0.type"]');
    await picker.waitFor();
    const offered = await picker.locator('option').evaluateAll((options: any[]) => options.map((o) => o.value));
    assert.ok(offered.includes(`${w.partner.id}/relay`) && offered.includes(`${w.partner.id}/relay:1`) && offered.includes(`${w.partner.id}/meter`), offered.join(' '));
    assert.ok(await picker.getByText('relay, version 1 only').count() === 1);
    await page.getByLabel('Hardware id', { exact: true }).last().fill('RELAY-0001');
    await picker.selectOption(`${w.partner.id}/relay:1`);
    await page.locator('select[name="o0.network"]').selectOption('thethingsnetwork');
    // Another option changed after the type was picked: the pick stays.
    await page.locator('input[name="o0.data.devEui"]').fill('70B3D57ED00C0601');
    await page.locator('input[name="o0.data.applicationId"]').fill('fleet');
    assert.is(await picker.inputValue(), `${w.partner.id}/relay:1`);
    await page.getByRole('button', { name: 'Create activation' }).click();
    const shown = page.getByTestId('activation-code');
    const code = await shown.innerText();
    assert.match(code, /^[0-9A-Z]{16}$/);
    const stored = (await api(w, 'GET', `/partner/${w.partner.id}/activations/${code}`)).body;
    assert.is(stored.options[0].device.type, `${w.partner.id}/relay:1`, 'the version picked');
    const cell = page.locator('[data-testid=activations] code', { hasText: code });
    await cell.waitFor();
    for (const element of [shown, cell]) {
      const lines = await element.evaluate((el: any) => el.getClientRects().length);
      assert.is(lines, 1, 'the code on one line, not broken inside');
    }
    await shown.click();
    assert.is(await page.evaluate(() => String((globalThis as any).getSelection())), code, 'one click selects the whole code');
    const wide = await page.evaluate(() => {
      const doc = (globalThis as any).document;
      return { width: doc.documentElement.scrollWidth as number, over: [...doc.querySelectorAll('body *')].filter((el: any) => el.getBoundingClientRect().right > 361).map((el: any) => `${el.tagName}.${el.className}`).slice(0, 8) };
    });
    assert.ok(wide.width <= 360, `the page fits a phone: ${JSON.stringify(wide)}`);
    await screenshot(page, 'console-activation-phone');
    assert.equal(await accessibilityProblems(page), [], 'activations page on a phone: labels, names and contrast');
    assert.equal(errors, []);
    await close();
  });
});

test.run();
