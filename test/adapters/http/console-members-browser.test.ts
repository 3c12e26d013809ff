/**
 * The console's members, usage, keys and audit log page, and what each role is offered, in real headless Chromium
 * against the whole service on its embedded defaults: an owner changes a member's role, adds and
 * removes a member, creates an API key (its token shown once, and working) and revokes it; a viewer
 * sees the members and the ground's data but is offered nothing it may not do (no device, rule or
 * integration form, no alarm action, no command form, no member or key management).
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';
import { tempDir } from '../../support/tmp.ts';

interface World {
  service: Service;
  base: string;
  browser: Browser;
  remove(): void;
  owner: { id: string; token: string };
  viewer: { id: string; token: string };
  editor: { id: string; token: string };
  groundId: string;
  deviceId: string;
}

const test = suite<World>('console members page in Chromium');

async function signIn(w: World, token: string): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const context = await w.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = pageErrors(page);
  await page.goto(`${w.base}/console/`);
  await page.getByLabel('User or partner token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Grounds' }).waitFor();
  return { page, errors, close: () => context.close() };
}

withChromium('console members browser tests', (chromiumPath) => {
  test.before(async (w) => {
    const t = tempDir('console-members');
    w.remove = t.remove;
    const { service, base } = await startEmbeddedService({ dir: t.dir });
    Object.assign(w, { service, base });
    const r = service.registry;
    const [owner, viewer, editor] = await Promise.all(['Olga', 'Vik', 'Eda'].map((name) => r.createUser({ name })));
    w.owner = { id: owner.entity.id, token: owner.token };
    w.viewer = { id: viewer.entity.id, token: viewer.token };
    w.editor = { id: editor.entity.id, token: editor.token };
    w.groundId = (await r.createGround({ name: 'Greenhouse', userId: owner.entity.id })).id;
    await r.setMemberRole(w.groundId, viewer.entity.id, 'viewer');
    await r.setQuota(w.groundId, { devices: 5, retentionDays: 30 });
    w.deviceId = (await r.createDevice({ groundId: w.groundId, name: 'vent', assets: [{ name: 'open', is: 'actuator', profile: { type: 'boolean' } }, { name: 't', is: 'sensor', profile: { type: 'number' } }] })).device.id;
    w.browser = await launchChromium(chromiumPath);
  });

  test.after(async (w) => {
    await w.browser?.close();
    await w.service?.stop();
    w.remove?.();
  });

  test('an owner changes roles, adds and removes a member, creates a working key and revokes it', async (w) => {
    const { page, errors, close } = await signIn(w, w.owner.token);
    await page.goto(`${w.base}/console/#/ground/${w.groundId}`);
    await page.getByTestId('members-link').click();
    await page.getByTestId('my-role').filter({ hasText: 'You are an owner' }).waitFor();
    const usage = page.getByTestId('usage');
    await usage.waitFor();
    assert.match(await usage.locator('tr', { hasText: 'Devices' }).innerText(), /Devices\s+1\s+5/, 'devices against the quota');
    assert.match(await usage.locator('tr', { hasText: 'States stored' }).innerText(), /kept 30 days/);
    const rows = page.locator('[data-testid=members] tbody tr');
    await rows.nth(1).waitFor();
    assert.equal(await rows.locator('th').allInnerTexts(), ['Olga', 'Vik']);

    await page.getByLabel('Role of Vik').selectOption('editor');
    await page.getByTestId('members').locator(`tr[data-member="${w.viewer.id}"] select`).filter({ hasText: 'editor' }).waitFor();
    await waitForRole(w, w.viewer.id, 'editor');

    await page.getByLabel('User id').fill(w.editor.id);
    await page.locator('#member-role').selectOption('viewer');
    await page.getByRole('button', { name: 'Add the member' }).click();
    await page.locator(`tr[data-member="${w.editor.id}"]`).waitFor();
    await waitForRole(w, w.editor.id, 'viewer');
    page.once('dialog', (dialog) => dialog.accept());
    await page.locator(`tr[data-member="${w.editor.id}"]`).getByRole('button', { name: 'Remove' }).click();
    await page.locator(`tr[data-member="${w.editor.id}"]`).waitFor({ state: 'detached' });
    await waitForRole(w, w.editor.id, undefined);

    await page.getByLabel('Name', { exact: true }).fill('dashboard');
    await page.locator('#key-role').selectOption('viewer');
    await page.getByLabel('Expires after (days, empty: never)').fill('30');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const token = await page.getByTestId('shown-token').innerText();
    assert.match(token, /^fsk_/);
    const withKey = await fetch(`${w.base}/ground/${w.groundId}/devices`, { headers: { authorization: `Bearer ${token}` } });
    assert.is(withKey.status, 200, 'the key reads its ground');
    const keyRow = page.locator('[data-testid=keys] tbody tr');
    await keyRow.first().waitFor();
    assert.match(await keyRow.first().innerText(), /dashboard\s+viewer/);
    await screenshot(page, 'console-members');
    assert.equal(await accessibilityProblems(page), [], 'members page: labels, names and contrast');
    page.once('dialog', (dialog) => dialog.accept());
    await keyRow.first().getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('No key.').waitFor();
    const revoked = await fetch(`${w.base}/ground/${w.groundId}/devices`, { headers: { authorization: `Bearer ${token}` } });
    assert.is(revoked.status, 401, 'the revoked key is refused');
    // The audit log, newest first: the key revoked, made, the member removed, added, the role changed, all by Olga.
    const audit = page.locator('[data-testid=audit] tbody tr');
    for (let i = 0; i < 50 && await audit.filter({ hasText: 'deleteKey' }).count() === 0; i++) {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(100);
    }
    const operations = (await audit.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-operation')))).slice(0, 5);
    assert.equal(operations, ['deleteKey', 'createKey', 'deleteMember', 'putMember', 'putMember']);
    assert.match(await audit.filter({ hasText: 'deleteMember' }).innerText(), /Olga\s+deleteMember\s+\S+\s+204/);
    assert.match(await audit.filter({ hasText: 'Vik' }).innerText(), /Olga\s+putMember\s+Vik\s+200/, 'a member named');
    assert.equal(await accessibilityProblems(page), [], 'members page with the audit log: labels, names and contrast');
    await w.service.registry.setMemberRole(w.groundId, w.viewer.id, 'viewer');
    assert.equal(errors, []);
    await close();
  });

  for (const who of ['editor', 'viewer'] as const) {
    test(`${who === 'viewer' ? 'a viewer reads the ground and its members, and is offered no change' : 'an editor is offered the changes a viewer is not (the control)'}`, async (w) => {
      await w.service.registry.setMemberRole(w.groundId, w.viewer.id, who);
      const { page, errors, close } = await signIn(w, w.viewer.token);
      const offered = who === 'editor' ? 1 : 0;
      await openRead(page, w, `/ground/${w.groundId}`);
      await page.locator(`tr[data-device="${w.deviceId}"]`).waitFor();
      assert.is(await page.getByRole('heading', { name: 'Create a device' }).count(), offered, 'the device form');

      await openRead(page, w, `/ground/${w.groundId}/members`);
      await page.getByTestId('my-role').filter({ hasText: `You are a ${who}` }).waitFor();
      await page.locator('[data-testid=members] tbody tr').nth(1).waitFor();
      assert.is(await page.locator('[data-testid=members] select').count(), 0, 'no role to change (owners only)');
      assert.is(await page.getByRole('button', { name: 'Remove' }).count(), 0);
      assert.is(await page.getByTestId('add-member').count(), 0);
      assert.is(await page.getByRole('heading', { name: 'API keys' }).count(), 0);
      assert.is(await page.getByTestId('usage').count(), 0, 'usage is for owners');
      assert.is(await page.getByRole('heading', { name: 'Audit log' }).count(), 0, 'the audit log is for owners');

      await openRead(page, w, `/ground/${w.groundId}/rules`);
      await page.getByRole('heading', { name: 'Rules', exact: true }).waitFor();
      assert.is(await page.getByRole('button', { name: /create/i }).count(), offered, 'the rule form');

      await openRead(page, w, `/ground/${w.groundId}/integrations`);
      await page.getByRole('heading', { name: 'Integrations', exact: true }).waitFor();
      assert.is(await page.getByRole('button', { name: /create/i }).count(), offered, 'the integration form');

      await openRead(page, w, `/device/${w.deviceId}/asset/open`);
      assert.is(await page.getByRole('button', { name: 'Send', exact: true }).count(), offered, 'the command form');
      assert.equal(errors, []);
      await close();
    });
  }
});

/** Opens a console route and waits until the page has read the caller's role (GET /ground/{id}), then a moment for it to render. */
async function openRead(page: Page, w: World, route: string): Promise<void> {
  const role = page.waitForResponse((r) => new URL(r.url()).pathname === `/ground/${w.groundId}` && r.request().method() === 'GET');
  await page.goto(`${w.base}/console/#${route}`);
  assert.is((await role).status(), 200);
  await page.waitForTimeout(200);
}

async function waitForRole(w: World, userId: string, role: string | undefined): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const members = await w.service.registry.listMembers(w.groundId);
    if (members.find((m) => m.userId === userId)?.role === role) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.unreachable(`${userId} did not become ${role ?? 'no member'}`);
}

test.run();
