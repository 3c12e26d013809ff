/**
 * Contract of the rules port (engine/ports/ruleRegistry.ts): a ground's rules (every kind of
 * condition, `for`, `clear`, actions), pages, changes, refusals of malformed input, and how an
 * asset is declared on the ground's devices. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, NewRule, PrincipalRegistry, Rule, RuleRegistry } from '../../engine/ports/registry.ts';
import { MAX_RULE_DEVICES } from '../../schemas/rules.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

const MISSING = 'A'.repeat(22);

export function rulesContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<RuleRegistry & FleetRegistry & PrincipalRegistry>(`rules contract: ${name}`, factory);

  const rule = (groundId: string, extra: Partial<NewRule> = {}): NewRule => ({
    groundId, name: 'too hot', asset: 'temp', condition: { above: 30 }, severity: 'major', ...extra,
  });

  /** VALIDATION_FAILED naming `field` or a path in it (a union names the branch it tried: `condition.above`). */
  const refused = async (promise: Promise<unknown>, field: string, what = field) => {
    const e = await rejects(promise, 'VALIDATION_FAILED');
    const got = String(e.detail?.field);
    assert.ok(got === field || got.startsWith(`${field}.`), `${what}: field ${got}, expected ${field}`);
  };

  /** Declarations in a stable order, for comparing sets. */
  const sorted = <T>(items: T[]) => [...items].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

  test('create, get and list every kind of condition, with for, clear and actions', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const meter = await r.createDevice({ groundId: ground.id, name: 'meter' });
    const inputs: NewRule[] = [
      rule(ground.id, { name: 'above', condition: { above: 30 }, for: 'PT15M', clear: { below: 28 }, actions: [{ integration: MISSING }] }),
      rule(ground.id, { name: 'below', condition: { below: -5.5 }, severity: 'critical', devices: [meter.device.id] }),
      rule(ground.id, { name: 'outside', condition: { outside: [10, 20] }, clear: { outside: [11, 19] }, severity: 'minor' }),
      rule(ground.id, { name: 'equals', asset: 'state', condition: { equals: { mode: 'fault', codes: [1, 2], ok: false, note: null } }, severity: 'warning',
        actions: [{ command: { asset: 'reset', value: { now: true } } }, { command: { asset: 'led', value: null } }] }),
      rule(ground.id, { name: 'silent', asset: 'heartbeat', condition: { silentFor: 'P1DT12H' }, severity: 'info' }),
      rule(ground.id, { name: 'fence', asset: 'location', condition: { outsideArea: { latitude: 47.37, longitude: 8.54, radiusMeters: 500 } },
        for: 'PT0.5S', clear: { outsideArea: { latitude: 47.37, longitude: 8.54, radiusMeters: 400 } } }),
    ];
    const created: Rule[] = [];
    for (const input of inputs) {
      clock.advance(1);
      const made = await r.createRule(input);
      assert.match(made.id, ID_RE);
      const { groundId, actions, ...rest } = input;
      assert.equal(made, { id: made.id, groundId, ...rest, actions: actions ?? [], createdAt: clock.now(), updatedAt: clock.now() });
      assert.equal(await r.getRule(made.id), made);
      created.push(made);
    }
    assert.not.ok('for' in created[1] || 'clear' in created[1] || 'devices' in created[0], 'absent fields stay absent');
    assert.equal(await r.listRules(ground.id), created);
  });

  test('list: a ground\'s rules oldest first (created time, then id), by pages; others\' never', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(i % 2);
      ids.push((await r.createRule(rule(ground.id, { name: `r${i}` }))).id);
    }
    await r.createRule(rule(other.id));
    const all = await r.listRules(ground.id);
    assert.equal(all.map((x) => x.id).sort(), [...ids].sort());
    assert.equal(all.map((x) => x.id), [...all].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((x) => x.id));
    const first = await r.listRules(ground.id, { limit: 2 });
    assert.equal(first, all.slice(0, 2));
    const last = first[first.length - 1];
    const second = await r.listRules(ground.id, { limit: 2, after: { createdAt: last.createdAt, id: last.id } });
    assert.equal(second, all.slice(2, 4));
    const rest = await r.listRules(ground.id, { after: { createdAt: second[1].createdAt, id: second[1].id } });
    assert.equal([...first, ...second, ...rest].map((x) => x.id), all.map((x) => x.id));
    assert.equal(await r.listRules(ground.id, { after: { createdAt: all[4].createdAt, id: all[4].id } }), []);
    for (const bad of MALFORMED_IDS) assert.equal(await r.listRules(any(bad)), []);
    assert.equal(await r.listRules(MISSING), []);
    await rejects(r.listRules(ground.id, { limit: 0 }), 'VALIDATION_FAILED');
    await rejects(r.listRules(ground.id, any({ limit: 2, extra: 1 }) as never), 'VALIDATION_FAILED');
  });

  test('update: each field changes; null removes devices, for and clear; updatedAt moves, createdAt stays', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const a = await r.createDevice({ groundId: ground.id, name: 'a' });
    const b = await r.createDevice({ groundId: ground.id, name: 'b' });
    const original = await r.createRule(rule(ground.id, { devices: [a.device.id], for: 'PT3S', clear: { below: 25 }, actions: [{ integration: MISSING }] }));
    let expected: Rule = original;
    const steps: Array<Parameters<RuleRegistry['updateRule']>[1]> = [
      { name: 'renamed' },
      { asset: 'hum' },
      { devices: [b.device.id, a.device.id] },
      { condition: { outside: [-1, 1] } },
      { for: 'P2W' },
      { clear: { equals: 'ok' } },
      { severity: 'critical' },
      { actions: [{ command: { asset: 'fan', value: 1 } }] },
      { actions: [] },
    ];
    for (const patch of steps) {
      clock.advance(7);
      const updated = await r.updateRule(original.id, patch);
      expected = { ...expected, ...patch, updatedAt: clock.now() } as Rule;
      assert.equal(updated, expected, JSON.stringify(patch));
      assert.is(updated.createdAt, original.createdAt);
    }
    clock.advance(7);
    const removed = await r.updateRule(original.id, { devices: null, for: null, clear: null });
    const { devices: _d, for: _f, clear: _c, ...kept } = expected;
    assert.equal(removed, { ...kept, updatedAt: clock.now() });
    assert.not.ok('devices' in removed || 'for' in removed || 'clear' in removed);
    assert.equal(await r.getRule(original.id), removed);
    clock.advance(7);
    const nothing = await r.updateRule(original.id, {});
    assert.equal(nothing, { ...removed, updatedAt: clock.now() }, 'an empty change only touches updatedAt');
  });

  test('update refusals: a missing rule, a malformed id, a device of another ground, hostile fields; a refused change changes nothing', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const foreign = await r.createDevice({ groundId: other.id, name: 'x' });
    const made = await r.createRule(rule(ground.id));
    await rejects(r.updateRule(MISSING, { name: 'x' }), 'NOT_FOUND', 'ruleId');
    await rejects(r.updateRule(any('bad'), { name: 'x' }), 'VALIDATION_FAILED', 'ruleId');
    await rejects(r.updateRule(made.id, { devices: [foreign.device.id] }), 'NOT_FOUND', 'devices');
    await rejects(r.updateRule(made.id, any({ groundId: other.id }) as never), 'VALIDATION_FAILED', 'groundId');
    await rejects(r.updateRule(made.id, { severity: any('fatal') as never }), 'VALIDATION_FAILED', 'severity');
    await rejects(r.updateRule(made.id, { name: 'a\u0007b' }), 'VALIDATION_FAILED', 'name');
    await refused(r.updateRule(made.id, { clear: any({ silentFor: 'PT1M' }) as never }), 'clear');
    await refused(r.updateRule(made.id, { condition: { equals: undefined } }), 'condition');
    assert.equal(await r.getRule(made.id), made);
  });

  test('delete: true, then false; gone from get and list; malformed ids are answered without a query', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const made = await r.createRule(rule(ground.id));
    assert.is(await r.deleteRule(made.id), true);
    assert.is(await r.deleteRule(made.id), false);
    assert.is(await r.getRule(made.id), undefined);
    assert.equal(await r.listRules(ground.id), []);
    assert.is(await r.getRule(MISSING), undefined);
    for (const bad of MALFORMED_IDS) {
      assert.is(await r.getRule(any(bad)), undefined);
      assert.is(await r.deleteRule(any(bad)), false);
    }
  });

  test('a missing ground is NOT_FOUND; a listed device of another ground or of none is NOT_FOUND (devices)', async ({ r, h }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const mine = await r.createDevice({ groundId: ground.id, name: 'meter' });
    const theirs = await r.createDevice({ groundId: other.id, name: 'meter' });
    const before = (await h.sql('SELECT count(*) AS n FROM rules'))[0].n;
    await rejects(r.createRule(rule(MISSING)), 'NOT_FOUND', 'groundId');
    await rejects(r.createRule(rule(ground.id, { devices: [theirs.device.id] })), 'NOT_FOUND', 'devices');
    await rejects(r.createRule(rule(ground.id, { devices: [mine.device.id, MISSING] })), 'NOT_FOUND', 'devices');
    assert.equal((await h.sql('SELECT count(*) AS n FROM rules'))[0].n, before);
    const made = await r.createRule(rule(ground.id, { devices: [mine.device.id] }));
    assert.equal(made.devices, [mine.device.id]);
  });

  test('hostile input is VALIDATION_FAILED naming the field, before anything is stored', async ({ r, h }) => {
    const { ground } = await ownedGround(r);
    const before = (await h.sql('SELECT count(*) AS n FROM rules'))[0].n;
    const ids = Array.from({ length: MAX_RULE_DEVICES + 1 }, (_, i) => `${'B'.repeat(18)}${String(i).padStart(4, '0')}`);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ secret: 'x' }, 'secret'],
      [{ id: MISSING }, 'id'],
      [{ createdAt: 1 }, 'createdAt'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(129) }, 'name'],
      [{ name: 'too\u0007hot' }, 'name'],
      [{ name: 'too\u0000hot' }, 'name'],
      [{ name: 'too\u200Bhot' }, 'name'],
      [{ name: 'a\u202Etoh' }, 'name'],
      [{ name: 'bad\ud800' }, 'name'],
      [{ asset: 'a/b' }, 'asset'],
      [{ asset: '' }, 'asset'],
      [{ groundId: 'not-an-id' }, 'groundId'],
      [{ devices: [] }, 'devices'],
      [{ devices: ids }, 'devices'],
      [{ devices: ['not-an-id'] }, 'devices.0'],
      [{ devices: [MISSING, MISSING] }, 'devices'],
      [{ severity: 'fatal' }, 'severity'],
      [{ severity: undefined }, 'severity'],
      [{ condition: {} }, 'condition'],
      [{ condition: { above: 'hot' } }, 'condition'],
      [{ condition: { above: Number.NaN } }, 'condition'],
      [{ condition: { above: Number.POSITIVE_INFINITY } }, 'condition'],
      [{ condition: { above: 1, below: 0 } }, 'condition'],
      [{ condition: { silentFor: 'P1M' } }, 'condition'],
      [{ condition: { outsideArea: { latitude: 91, longitude: 0, radiusMeters: 1 } } }, 'condition'],
      [{ condition: { equals: undefined } }, 'condition'],
      [{ condition: { equals: 2n } }, 'condition'],
      [{ condition: { equals: 'x'.repeat(70_000) } }, 'condition'],
      [{ for: 'P1Y' }, 'for'],
      [{ for: '15 minutes' }, 'for'],
      [{ clear: { silentFor: 'PT1M' } }, 'clear'],
      [{ actions: Array.from({ length: 11 }, () => ({ integration: MISSING })) }, 'actions'],
      [{ actions: [{ webhook: 'https://x.example/' }] }, 'actions.0'],
      [{ actions: [{ command: { asset: 'led' } }] }, 'actions.0'],
    ];
    for (const [extra, field] of cases) {
      const what = JSON.stringify(extra, (_, v) => (typeof v === 'bigint' ? String(v) : v)).slice(0, 80);
      await refused(r.createRule(rule(ground.id, extra as Partial<NewRule>)), field, what);
    }
    assert.equal((await h.sql('SELECT count(*) AS n FROM rules'))[0].n, before);
  });

  test('names are canonical: a leading BOM dropped, NFC; the asset name too', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const made = await r.createRule(rule(ground.id, { name: '\uFEFFZu\u0308rich', asset: '\uFEFFtemp' }));
    assert.is(made.name, 'Z\u00fcrich');
    assert.is(made.asset, 'temp');
    assert.is((await r.updateRule(made.id, { asset: '\uFEFFhum' })).asset, 'hum');
  });

  test('deleting the ground deletes its rules', async ({ r, h }) => {
    const { ground } = await ownedGround(r);
    const a = await r.createRule(rule(ground.id, { name: 'a' }));
    const b = await r.createRule(rule(ground.id, { name: 'b' }));
    await h.sql('DELETE FROM grounds WHERE id = $1', [ground.id]);
    assert.is(await r.getRule(a.id), undefined);
    assert.is(await r.getRule(b.id), undefined);
    assert.equal(await h.sql('SELECT id FROM rules WHERE ground_id = $1', [ground.id]), []);
  });

  test('assetDeclarations: the distinct (kind, profile) pairs on the ground\'s devices, only the listed ones when given, and the listed ones that miss it', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const celsius = { type: 'number', unit: '°C' };
    const a = await r.createDevice({ groundId: ground.id, name: 'a', assets: [{ name: 'temp', is: 'sensor', profile: celsius }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }] });
    // The same profile with its keys in another order is the same declaration.
    const b = await r.createDevice({ groundId: ground.id, name: 'b', assets: [{ name: 'temp', is: 'sensor', profile: { unit: '°C', type: 'number' } }] });
    const c = await r.createDevice({ groundId: ground.id, name: 'c', assets: [{ name: 'temp', is: 'sensor', profile: { type: 'number', unit: '°F', minimum: -40 } }] });
    const d = await r.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 'temp', is: 'virtual', profile: celsius }] });
    const bare = await r.createDevice({ groundId: ground.id, name: 'bare', assets: [{ name: 'hum', is: 'sensor' }] });
    const theirs = await r.createDevice({ groundId: other.id, name: 'theirs', assets: [{ name: 'temp', is: 'actuator', profile: { type: 'string' } }] });

    const every = await r.assetDeclarations(ground.id, 'temp');
    assert.equal(sorted(every.declarations), sorted([
      { is: 'sensor', profile: celsius },
      { is: 'sensor', profile: { type: 'number', unit: '°F', minimum: -40 } },
      { is: 'virtual', profile: celsius },
    ]), 'distinct, and never another ground\'s');
    assert.equal(every.missing, []);
    for (const declaration of every.declarations) assert.type(declaration.profile, 'object', 'profiles are parsed');

    assert.equal(await r.assetDeclarations(ground.id, 'temp', [a.device.id, b.device.id]), { declarations: [{ is: 'sensor', profile: celsius }], missing: [] });
    assert.equal(await r.assetDeclarations(ground.id, 'led', [a.device.id]), { declarations: [{ is: 'actuator', profile: { type: 'boolean' } }], missing: [] });
    assert.equal(await r.assetDeclarations(ground.id, 'hum'), { declarations: [{ is: 'sensor', profile: {} }], missing: [] });

    const listed = await r.assetDeclarations(ground.id, 'temp', [c.device.id, MISSING, theirs.device.id, bare.device.id, d.device.id]);
    assert.equal(sorted(listed.declarations), sorted([{ is: 'sensor', profile: { type: 'number', unit: '°F', minimum: -40 } }, { is: 'virtual', profile: celsius }]));
    assert.equal(listed.missing, [MISSING, theirs.device.id, bare.device.id], 'an unknown id, another ground\'s device, a device without the asset; in the order listed');

    assert.equal(await r.assetDeclarations(ground.id, 'pressure'), { declarations: [], missing: [] }, 'an asset no device has');
    assert.equal(await r.assetDeclarations(ground.id, 'pressure', [a.device.id, b.device.id]), { declarations: [], missing: [a.device.id, b.device.id] });
    assert.equal(await r.assetDeclarations(other.id, 'temp', [a.device.id]), { declarations: [], missing: [a.device.id] });
    assert.equal(await r.assetDeclarations(MISSING, 'temp'), { declarations: [], missing: [] });
    for (const bad of MALFORMED_IDS) assert.equal(await r.assetDeclarations(any(bad), 'temp', [a.device.id]), { declarations: [], missing: [a.device.id] });
    assert.equal(await r.assetDeclarations(ground.id, 'a/b', [a.device.id]), { declarations: [], missing: [a.device.id] }, 'no asset can have that name');
    await rejects(r.assetDeclarations(ground.id, 'temp', []), 'VALIDATION_FAILED', 'devices');
    await rejects(r.assetDeclarations(ground.id, 'temp', ['not-an-id']), 'VALIDATION_FAILED', 'devices.0');
  });

  return test;
}
