/**
 * A ground's audit log over HTTP (docs/grounds.md "Audit log") on PGlite and PostgreSQL: the
 * changes of owners, editors, viewers and keys are recorded with who, when, the operation, the
 * target and the result, refusals by role included; what is no change of the ground's (reads, states
 * sent, 401s, strangers' refusals, unknown ids) is not. GET /ground/{id}/audit is the owner's, newest
 * first by pages; hostile limits and cursors are 422.
 */
import * as assert from 'uvu/assert';
import { suitePerRegistry, type EdgeHarness, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';
import { auditUntil, hasEntry, type AuditReader } from '../../support/auditLog.ts';

function reader(h: EdgeHarness): AuditReader {
  return { get: (path, token) => h.request('GET', path, { token }), tick: () => h.clock.advance(250) };
}

/** A ground with an owner, an editor, a viewer, a stranger, a viewer key and an editor key. */
async function world(h: EdgeHarness) {
  const s = await h.seed();
  const user = async (name: string, role?: 'editor' | 'viewer') => {
    const u = await h.registry.createUser({ name });
    if (role !== undefined) await h.registry.setMemberRole(s.groundId, u.entity.id, role);
    return { id: u.entity.id, token: u.token };
  };
  const editor = await user('editor', 'editor');
  const viewer = await user('viewer', 'viewer');
  const stranger = await user('stranger');
  await h.request('POST', '/grounds', { token: stranger.token, json: { name: 'elsewhere' } });
  const viewerKey = await h.registry.createKey(s.groundId, { name: 'v', role: 'viewer' }, s.userId);
  const editorKey = await h.registry.createKey(s.groundId, { name: 'e', role: 'editor' }, s.userId);
  return {
    ...s, editor, viewer, stranger,
    viewerKey: { id: viewerKey.key.id, token: viewerKey.token },
    editorKey: { id: editorKey.key.id, token: editorKey.token },
  };
}

function auditSuite(factory: RegistryFactory) {
  const test = harnessSuite('http audit log', factory, { clockStart: Date.now() });

  test('changes by users and keys are recorded with actor, operation, target and result; refusals by role too', async ({ h }) => {
    const w = await world(h);
    const started = h.clock.now();
    const created = await h.request('POST', `/ground/${w.groundId}/devices`, { token: w.userToken, json: { name: 'made-by-owner' } });
    assert.is(created.status, 201, created.text);
    assert.is((await h.request('PATCH', `/device/${w.deviceId}`, { token: w.editor.token, json: { title: 'by an editor' } })).status, 200);
    const refused = await h.request('DELETE', `/device/${w.deviceId}`, { token: w.viewer.token });
    assert.equal([refused.status, refused.json.requiredRole], [403, 'editor']);
    assert.is((await h.request('PUT', `/ground/${w.groundId}/members/${w.stranger.id}`, { token: w.userToken, json: { role: 'viewer' } })).status, 201);
    assert.is((await h.request('PUT', `/ground/${w.groundId}/members/${w.stranger.id}`, { token: w.userToken, json: { role: 'boss' } })).status, 422);
    assert.is((await h.request('PATCH', `/device/${w.deviceId}`, { token: w.editorKey.token, json: { title: 'by a key' } })).status, 200);
    const keyRefused = await h.request('POST', `/ground/${w.groundId}/keys`, { token: w.editorKey.token, json: { name: 'k', role: 'viewer' } });
    assert.equal([keyRefused.status, keyRefused.json.requiredRole], [403, 'owner']);
    const newKey = await h.request('POST', `/ground/${w.groundId}/keys`, { token: w.userToken, json: { name: 'k2', role: 'viewer' } });
    assert.is((await h.request('DELETE', `/ground/${w.groundId}/keys/${newKey.json.id}`, { token: w.userToken })).status, 204);
    assert.is((await h.request('PUT', `/device/${w.deviceId}/asset/light`, { token: w.editor.token, json: { is: 'actuator', profile: { type: 'boolean' } } })).status, 201);

    const items = await auditUntil(reader(h), w.groundId, w.userToken, (all) => hasEntry(all, { operation: 'putAsset' }));
    const mine = items.map(({ groundId, at, ...rest }) => {
      assert.is(groundId, w.groundId);
      assert.ok(at >= started && at <= h.clock.now(), 'at: the edge\'s clock');
      return rest;
    });
    const assetId = (await h.request('GET', `/device/${w.deviceId}`, { token: w.userToken })).json.assets.find((a: { name: string }) => a.name === 'light').id;
    assert.equal(mine, [
      { actor: { kind: 'user', id: w.editor.id }, operation: 'putAsset', targetId: assetId, result: { status: 201 } },
      { actor: { kind: 'user', id: w.userId }, operation: 'deleteKey', targetId: newKey.json.id, result: { status: 204 } },
      { actor: { kind: 'user', id: w.userId }, operation: 'createKey', targetId: newKey.json.id, result: { status: 201 } },
      { actor: { kind: 'key', id: w.editorKey.id }, operation: 'createKey', targetId: w.groundId, result: { status: 403, code: 'FORBIDDEN' } },
      { actor: { kind: 'key', id: w.editorKey.id }, operation: 'updateDevice', targetId: w.deviceId, result: { status: 200 } },
      { actor: { kind: 'user', id: w.userId }, operation: 'putMember', targetId: w.stranger.id, result: { status: 422, code: 'VALIDATION_FAILED' } },
      { actor: { kind: 'user', id: w.userId }, operation: 'putMember', targetId: w.stranger.id, result: { status: 201 } },
      { actor: { kind: 'user', id: w.viewer.id }, operation: 'deleteDevice', targetId: w.deviceId, result: { status: 403, code: 'FORBIDDEN' } },
      { actor: { kind: 'user', id: w.editor.id }, operation: 'updateDevice', targetId: w.deviceId, result: { status: 200 } },
      { actor: { kind: 'user', id: w.userId }, operation: 'createDevice', targetId: created.json.id, result: { status: 201 } },
    ]);
  });

  test('not recorded: reads, states sent, 401s, strangers\' refusals, 404s (unknown or forged ids), device tokens', async ({ h }) => {
    const w = await world(h);
    // A stranger of this ground (a member of its own): refused without requiredRole, and not written into this ground's log.
    const outsider = await h.registry.createUser({ name: 'outsider' });
    const stranger = await h.request('PATCH', `/device/${w.deviceId}`, { token: outsider.token, json: { title: 'x' } });
    assert.equal([stranger.status, stranger.json.requiredRole], [403, undefined]);
    assert.is((await h.request('DELETE', `/ground/${w.groundId}/members/${w.editor.id}`, { token: outsider.token })).status, 403);
    assert.is((await h.request('PATCH', `/device/${w.deviceId}`, { json: { title: 'x' } })).status, 401);
    assert.is((await h.request('PATCH', `/device/${w.deviceId}`, { token: `fsu_${'A'.repeat(43)}`, json: { title: 'x' } })).status, 401);
    assert.is((await h.request('DELETE', `/rule/${'A'.repeat(22)}`, { token: w.userToken })).status, 404);
    // A member's forged or unknown id: 404, no change of the ground.
    assert.is((await h.request('DELETE', `/ground/${w.groundId}/keys/${'A'.repeat(22)}`, { token: w.userToken })).status, 404);
    assert.is((await h.request('DELETE', `/ground/${w.groundId}/members/${'A'.repeat(22)}`, { token: w.userToken })).status, 404);
    assert.is((await h.request('DELETE', `/rules/${'A'.repeat(22)}`, { token: w.editor.token })).status, 404);
    assert.is((await h.request('DELETE', `/device/${w.deviceId}/asset/nothing`, { token: w.editor.token })).status, 404);
    assert.is((await h.request('PUT', `/device/${w.deviceId}/asset/temperature/state`, { token: w.editor.token, json: { value: 1 } })).status, 202);
    assert.is((await h.request('PUT', `/device/${w.deviceId}/state`, { token: w.deviceToken, json: { temperature: { value: 2 } } })).status, 202);
    assert.is((await h.request('PUT', `/device/${w.deviceId}/asset/door`, { token: w.deviceToken, json: { is: 'sensor', profile: { type: 'boolean' } } })).status, 200);
    assert.is((await h.request('GET', `/device/${w.deviceId}`, { token: w.userToken })).status, 200);
    // A marker change last: once it is in the log, everything before it would be too.
    assert.is((await h.request('PATCH', `/ground/${w.groundId}`, { token: w.userToken, json: { name: 'marker' } })).status, 200);
    const items = await auditUntil(reader(h), w.groundId, w.userToken, (all) => hasEntry(all, { operation: 'updateGround' }));
    assert.equal(items.map((i) => [i.operation, i.actor.id, i.result.status]), [['updateGround', w.userId, 200]]);
  });

  test('the owner reads it; editors, viewers and keys get 403 naming owner; strangers 403, unknown ground 404, no token 401', async ({ h }) => {
    const w = await world(h);
    const path = `/ground/${w.groundId}/audit`;
    assert.is((await h.request('GET', path, { token: w.userToken })).status, 200);
    for (const token of [w.editor.token, w.viewer.token, w.viewerKey.token, w.editorKey.token]) {
      const res = await h.request('GET', path, { token });
      assert.equal([res.status, res.headers.get('content-type'), res.json.code, res.json.requiredRole], [403, 'application/problem+json', 'FORBIDDEN', 'owner']);
    }
    const stranger = await h.request('GET', path, { token: w.stranger.token });
    assert.equal([stranger.status, stranger.json.requiredRole], [403, undefined]);
    assert.is((await h.request('GET', path, { token: w.deviceToken })).status, 403);
    assert.is((await h.request('GET', `/ground/${'B'.repeat(22)}/audit`, { token: w.userToken })).status, 404);
    assert.is((await h.request('GET', path)).status, 401);
    assert.is((await h.request('GET', `/ground/not-an-id/audit`, { token: w.userToken })).status, 400);
  });

  test('pages newest first with `next` as the following page\'s `before`: no entry repeated or skipped', async ({ h }) => {
    const w = await world(h);
    for (let i = 0; i < 7; i++) {
      assert.is((await h.request('PATCH', `/device/${w.deviceId}`, { token: w.userToken, json: { title: `t${i}` } })).status, 200);
      // Two of them in one millisecond: seq orders them.
      if (i !== 3) h.clock.advance(1);
    }
    const all = await auditUntil(reader(h), w.groundId, w.userToken, (items) => items.length === 7);
    for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].at >= all[i].at, 'newest first');
    const paged: unknown[] = [];
    let before: string | undefined;
    const sizes: number[] = [];
    for (;;) {
      const res = await h.request('GET', `/ground/${w.groundId}/audit?limit=3${before === undefined ? '' : `&before=${before}`}`, { token: w.userToken });
      assert.is(res.status, 200, res.text);
      assert.is(res.headers.get('cache-control'), 'no-store');
      sizes.push(res.json.items.length);
      paged.push(...res.json.items);
      if (res.json.next === undefined) break;
      assert.match(res.json.next, /^[A-Za-z0-9_-]+$/);
      before = res.json.next;
    }
    assert.equal(sizes, [3, 3, 1]);
    assert.equal(paged, all);
  });

  test('hostile limits and cursors are 422 naming the parameter; nothing else leaks', async ({ h }) => {
    const w = await world(h);
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
    const valid = b64(`${h.clock.now()}.5`);
    const cases: [string, string][] = [
      ['limit=0', 'query.limit'], ['limit=1001', 'query.limit'], ['limit=-1', 'query.limit'], ['limit=1.5', 'query.limit'],
      ['limit=abc', 'query.limit'], ['limit=1e3', 'query.limit'], ['limit=1&limit=2', 'query.limit'],
      ['before=', 'query.before'], [`before=${valid.slice(0, -3)}`, 'query.before'], [`before=${b64('123.')}`, 'query.before'],
      [`before=${b64('abc.def')}`, 'query.before'], [`before=${b64('1.0')}`, 'query.before'], [`before=${b64('-1.5')}`, 'query.before'],
      [`before=${b64('99999999999999999.5')}`, 'query.before'], [`before=${b64('1.99999999999999999')}`, 'query.before'],
      [`before=${b64(`${h.clock.now()}.5 OR 1=1`)}`, 'query.before'], [`before=${b64('１２３.５')}`, 'query.before'],
      [`before=${b64('1\u202e.5')}`, 'query.before'], ['before=%E2%80%AE', 'query.before'], [`before=${'A'.repeat(65)}`, 'query.before'],
      ["before=' OR '1'='1", 'query.before'], ['cursor=abc', 'query.cursor'], ['order=asc', 'query.order'],
    ];
    for (const [query, field] of cases) {
      const res = await h.request('GET', `/ground/${w.groundId}/audit?${query}`, { token: w.userToken });
      assert.equal([res.status, res.headers.get('content-type'), res.json?.code], [422, 'application/problem+json', 'VALIDATION_FAILED'], query);
      assert.ok(res.json.errors.some((e: { path: string }) => e.path === field), `${query}: ${JSON.stringify(res.json.errors)}`);
    }
    const ok = await h.request('GET', `/ground/${w.groundId}/audit?limit=5&before=${valid}`, { token: w.userToken });
    assert.equal([ok.status, ok.json.items], [200, []]);
  });

  return test;
}

for (const s of suitePerRegistry('http audit log', auditSuite)) s.run();
