/**
 * Canonical strings in the registry (DESIGN.md §9, engine/kernel/canonicalText.ts): names and
 * hardware ids are stored without a leading BOM and in NFC, and refused with a lone surrogate or an
 * invisible/control character, before the length rule and the unique keys see them. The fuzz run
 * checks that uniqueness holds on what is stored, over inputs full of Unicode edge cases.
 */
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { canonicalName } from '../../../engine/kernel/canonicalText.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { NewActivation } from '../../../engine/ports/registry.ts';
import type { SqlRegistry } from '../../../adapters/sql-registry/createSqlRegistry.ts';
import { rejects } from '../../contracts/registry.contract.ts';
import { suitePerRegistry } from '../../support/edgeHarness.ts';
import { suite } from '../../support/suite.ts';

type Open = () => Promise<{ r: SqlRegistry; dispose(): Promise<void> }>;

function canonicalSuite(name: string, open: Open) {
  const test = suite<{ r: SqlRegistry; dispose(): Promise<void> }>(`registry: canonical strings (${name})`);

  test.before(async (ctx) => {
    Object.assign(ctx, await open());
  });
  test.after(async (ctx) => {
    await ctx.dispose?.();
  });

  const COMPOSED = '\u00C4rger'; // Ärger, Ä precomposed
  const DECOMPOSED = 'A\u0308rger'; // A + combining diaeresis

  async function ground(r: SqlRegistry, name = 'site') {
    return r.createGround({ name });
  }

  test('a leading BOM is stripped from device, ground, user and device type names', async ({ r }) => {
    const g = await ground(r, '\uFEFFhome');
    assert.is(g.name, 'home');
    const user = await r.createUser({ name: '\uFEFF\uFEFFalice' });
    assert.is(user.entity.name, 'alice');
    const { device } = await r.createDevice({ groundId: g.id, name: '\uFEFFthermo', title: '\uFEFFThermo', assets: [{ name: '\uFEFFtemp', is: 'sensor' }] });
    assert.is(device.name, 'thermo');
    assert.is(device.title, 'Thermo');
    assert.equal(device.assets.map((a) => a.name), ['temp']);
    await rejects(r.createDevice({ groundId: g.id, name: 'thermo' }), 'CONFLICT');
    const partner = (await r.createPartner({ name: 'Acme' })).entity;
    const type = await r.publishDeviceType(partner.id, '\uFEFFtracker', { assets: [] });
    assert.is(type.name, 'tracker');
    assert.ok(await r.getDeviceType(partner.id, '\uFEFFtracker'), 'a lookup takes the canonical form too');
  });

  test('a name of only U+FEFF is empty once canonical: the length rule refuses it', async ({ r }) => {
    const g = await ground(r);
    await rejects(r.createDevice({ groundId: g.id, name: '\uFEFF' }), 'VALIDATION_FAILED', 'name');
    await rejects(r.createGround({ name: '\uFEFF\uFEFF' }), 'VALIDATION_FAILED', 'name');
    await rejects(r.updateDevice((await r.createDevice({ groundId: g.id, name: 'x' })).device.id, { name: '\uFEFF' }), 'VALIDATION_FAILED', 'name');
  });

  test('NFC twins are one device name: stored composed, the second is a conflict', async ({ r }) => {
    const g = await ground(r);
    const { device } = await r.createDevice({ groundId: g.id, name: DECOMPOSED });
    assert.is(device.name, COMPOSED, 'stored in NFC');
    await rejects(r.createDevice({ groundId: g.id, name: COMPOSED }), 'CONFLICT');
    const other = (await r.createDevice({ groundId: g.id, name: 'other' })).device;
    await rejects(r.updateDevice(other.id, { name: `\uFEFF${COMPOSED}` }), 'CONFLICT');
  });

  test('lone surrogates and invisible characters are refused in names; free text keeps bidi marks', async ({ r }) => {
    const g = await ground(r);
    const lone = await rejects(r.createDevice({ groundId: g.id, name: 'bad\uD800' }), 'VALIDATION_FAILED', 'name');
    assert.is(lone.detail?.problem, 'lone-surrogate');
    assert.match(lone.message, /U\+D800/);
    await rejects(r.createDevice({ groundId: g.id, name: 'x\uDC00y' }), 'VALIDATION_FAILED', 'name');
    for (const ch of ['\u200B', '\u200D', '\u200E', '\u202E', '\u2066', '\u00AD', '\u0085', '\uFDD0', '\uFFFF', 'x\uFEFF'.slice(1), '\u2028']) {
      const e = await rejects(r.createDevice({ groundId: g.id, name: `ther${ch}mo` }), 'VALIDATION_FAILED', 'name');
      assert.is(e.detail?.problem, 'invisible', `U+${ch.charCodeAt(0).toString(16)}`);
    }
    await rejects(r.createDevice({ groundId: g.id, name: 'ok', title: 'bad\uD83D' }), 'VALIDATION_FAILED', 'title');
    const rtl = await r.createDevice({ groundId: g.id, name: 'rtl', description: '\u200Fשלום\u200E ok' });
    assert.is(rtl.device.description, '\u200Fשלום\u200E ok', 'free text may carry the marks its script needs');
  });

  function activation(hardwareId: string, type: string, devEui = '0011223344556677'): NewActivation {
    return {
      description: '\uFEFFunit',
      hardware: { id: hardwareId },
      options: [{ description: 'Cafe\u0301', device: { type }, network: { networkId: 'loriot', data: { devEui } } }],
    };
  }

  test('spec §2.6: NFC twins and a BOM are one hardware id, so one activation code', async ({ r }) => {
    const partner = (await r.createPartner({ name: 'Acme' })).entity;
    await r.publishDeviceType(partner.id, 't', { assets: [] });
    const first = await r.createActivation(partner.id, activation(DECOMPOSED, `${partner.id}/t`));
    assert.is(first.hardware.id, COMPOSED);
    assert.is(first.description, 'unit');
    assert.is(first.options[0].description, 'Caf\u00E9');
    await rejects(r.createActivation(partner.id, activation(COMPOSED, `${partner.id}/t`)), 'CONFLICT');
    await rejects(r.createActivation(partner.id, activation(`\uFEFF${DECOMPOSED}`, `${partner.id}/t`)), 'CONFLICT');
    assert.is((await r.findActivationByHardware(partner.id, `\uFEFF${DECOMPOSED}`))?.code, first.code);
    assert.equal((await r.listActivations(partner.id, { hardwareId: DECOMPOSED })).map((a) => a.code), [first.code]);
    await rejects(r.createActivation(partner.id, activation('\uFEFF', `${partner.id}/t`)), 'VALIDATION_FAILED', 'hardware.id');
    await rejects(r.createActivation(partner.id, activation('mac\uD800', `${partner.id}/t`)), 'VALIDATION_FAILED', 'hardware.id');
    await rejects(r.createActivation(partner.id, activation('mac\u200B', `${partner.id}/t`)), 'VALIDATION_FAILED', 'hardware.id');
    // The device an end user rolls out is named after the canonical hardware id.
    const user = (await r.createUser({ name: 'u' })).entity;
    const g = await r.createGround({ name: 'g', userId: user.id });
    const done = await r.activate({ code: first.code, option: first.options[0].id, groundId: g.id, userId: user.id });
    assert.is(done.device.device.name, COMPOSED);
  });

  // ---- fuzz: uniqueness holds on what is stored ----

  const EDGE = [
    'a', 'A', 'e', '\u00C4', 'A\u0308', '\u00E9', 'e\u0301', '\u0301', '\u0308\u0301', '\u1E9B\u0323', // composed, decomposed, stacked marks
    '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', // zero-width characters
    '\u200E', '\u200F', '\u202B', '\u202E', '\u2067', // RTL marks, embeddings, overrides, isolates
    '\uFDD0', '\uFFFE', '\u{1FFFF}', '\u{10FFFF}', // noncharacters
    '\uD800', '\uDFFF', '\uD83D\uDE00', '\u0000', '\u0085', ' ', '\u00A0', '\u3000', 'ﬁ', '\u212B', '\u00C5', // and more
  ];

  const fuzzName = fc.array(fc.constantFrom(...EDGE), { minLength: 0, maxLength: 6 }).map((parts) => parts.join(''));

  test('fuzz: stored device names and hardware ids are canonical and unique; canonical twins never both get in', async ({ r }) => {
    const partner = (await r.createPartner({ name: 'fuzz' })).entity;
    await r.publishDeviceType(partner.id, 't', { assets: [] });
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fuzzName, { minLength: 1, maxLength: 12 }), async (names) => {
        runs++;
        const g = await r.createGround({ name: `g${runs}` });
        const accepted = new Map<string, string>();
        for (const [i, name] of names.entries()) {
          const expected = canonicalName(name).text;
          let stored: string | undefined;
          let hardware: string | undefined;
          try {
            stored = (await r.createDevice({ groundId: g.id, name })).device.name;
          } catch (error) {
            if (!(error instanceof FleetError) || (error.code !== 'VALIDATION_FAILED' && error.code !== 'CONFLICT')) throw error;
            if (error.code === 'CONFLICT') assert.ok(expected !== undefined && accepted.has(expected), `conflict only with a canonical twin: ${JSON.stringify(name)}`);
            else assert.ok(expected === undefined || expected.length === 0 || expected.length > 128, `refused only when not canonical: ${JSON.stringify(name)}`);
          }
          try {
            hardware = (await r.createActivation(partner.id, activation(name, `${partner.id}/t`, (runs * 100 + i).toString(16).padStart(16, '0')))).hardware.id;
          } catch (error) {
            if (!(error instanceof FleetError) || (error.code !== 'VALIDATION_FAILED' && error.code !== 'CONFLICT')) throw error;
          }
          if (stored !== undefined) {
            assert.is(stored, expected, 'what is stored is the canonical form');
            assert.ok(stored.isWellFormed() && stored === stored.normalize('NFC') && !stored.startsWith('\uFEFF'));
            assert.not.ok(accepted.has(stored), `a second device named ${JSON.stringify(stored)}`);
            accepted.set(stored, name);
          }
          if (hardware !== undefined) assert.is(hardware, expected);
        }
        const rows = (await r.executor.query<{ name: string }>('SELECT name FROM devices WHERE ground_id = $1', [g.id])).rows;
        assert.is(new Set(rows.map((x) => x.name)).size, rows.length);
        assert.is(rows.length, accepted.size);
      }),
      { numRuns: 60, seed: 11 },
    );
    const hw = (await r.executor.query<{ hardware_id: string; n: number }>('SELECT hardware_id, count(*)::int AS n FROM activations WHERE partner_id = $1 GROUP BY hardware_id HAVING count(*) > 1', [partner.id])).rows;
    assert.equal(hw, [], 'one hardware id, one activation code');
    const stored = (await r.executor.query<{ hardware_id: string }>('SELECT hardware_id FROM activations WHERE partner_id = $1', [partner.id])).rows;
    for (const { hardware_id } of stored) assert.is(canonicalName(hardware_id).text, hardware_id);
  });

  return test;
}

for (const suite of suitePerRegistry('canonical strings', (factory) => canonicalSuite(factory.name, async () => {
  const { registry, dispose } = await factory.create();
  // Both adapters are the SQL registry; the fuzz reads back what it stored.
  return { r: registry as SqlRegistry, dispose };
}))) suite.run();
