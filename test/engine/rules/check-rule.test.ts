/**
 * Rules are checked against the ground's devices before they are stored (engine/rules/checkRule.ts)
 * and their durations read as ISO 8601 (engine/rules/duration.ts): each problem named by its path
 * in the body, all at once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkRule, ruleProblems, type RuleCheckContext, type RuleShape } from '../../../engine/rules/checkRule.ts';
import { parseDuration } from '../../../engine/rules/duration.ts';
import { isFleetError } from '../../../engine/kernel/errors.ts';
import type { AssetDeclaration } from '../../../engine/ports/ruleRegistry.ts';

const number: AssetDeclaration = { is: 'sensor', profile: { type: 'number' } };
const integer: AssetDeclaration = { is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } };
const bool: AssetDeclaration = { is: 'sensor', profile: { type: 'boolean' } };
const text: AssetDeclaration = { is: 'sensor', profile: { type: 'string', enum: ['on', 'off'] } };
const location: AssetDeclaration = { is: 'sensor', profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } } };
const valve: AssetDeclaration = { is: 'actuator', profile: { type: 'boolean' } };

function context(assets: Record<string, AssetDeclaration[]>, missing: string[] = [], integrations: Record<string, string> = {}): RuleCheckContext {
  return {
    groundId: 'g1',
    declarations: async (asset) => ({ declarations: assets[asset] ?? [], missing: assets[asset] === undefined ? [...missing] : missing }),
    integrationGround: async (id) => integrations[id],
  };
}

/** The fields named, each once, in order (a field may have a line per profile it does not fit). */
const paths = async (rule: RuleShape, ctx: RuleCheckContext) => [...new Set((await ruleProblems(rule, ctx)).map((p) => p.path))];

test('durations: days, hours, minutes, seconds and weeks; years, months, empty and malformed are refused with a reason', () => {
  assert.equal(parseDuration('PT3S'), { ms: 3000 });
  assert.equal(parseDuration('PT15M'), { ms: 900_000 });
  assert.equal(parseDuration('P1D'), { ms: 86_400_000 });
  assert.equal(parseDuration('P1DT12H30M0.25S'), { ms: 86_400_000 + 12 * 3_600_000 + 30 * 60_000 + 250 });
  assert.equal(parseDuration('P2W'), { ms: 14 * 86_400_000 });
  assert.equal(parseDuration('PT0.5S'), { ms: 500 });
  for (const bad of ['P', 'PT', 'P1Y', 'P1M', 'PT1.5M', '1D', 'pt3s', 'PT-3S', 'P1DT', 'PT3S ', 'P\u0661D', 'PT1.2345S']) {
    const parsed = parseDuration(bad);
    assert.ok('problem' in parsed, bad);
  }
  assert.match((parseDuration('P1M') as { problem: string }).problem, /months/);
});

test('thresholds need a number; equals a value the profile accepts; outsideArea a location; silentFor anything', async () => {
  const ctx = context({ t: [number, integer], on: [bool], mode: [text], where: [location] });
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, for: 'PT2M', clear: { below: 6 } }, ctx), []);
  assert.equal(await paths({ asset: 't', condition: { outside: [2, 8] } }, ctx), []);
  assert.equal(await paths({ asset: 'on', condition: { above: 1 } }, ctx), ['body.condition'], 'a threshold on a boolean');
  assert.equal(await paths({ asset: 'mode', condition: { below: 1 } }, ctx), ['body.condition'], 'on a string');
  assert.equal(await paths({ asset: 'mode', condition: { equals: 'on' } }, ctx), []);
  assert.equal(await paths({ asset: 'mode', condition: { equals: 'auto' } }, ctx), ['body.condition'], 'a value outside the enum');
  assert.equal(await paths({ asset: 't', condition: { equals: 150 } }, ctx), ['body.condition'], 'fits one profile (number), not the other (0–100)');
  assert.equal(await paths({ asset: 'where', condition: { outsideArea: { latitude: 51, longitude: 3.7, radiusMeters: 500 } } }, ctx), []);
  assert.equal(await paths({ asset: 't', condition: { outsideArea: { latitude: 51, longitude: 3.7, radiusMeters: 500 } } }, ctx), ['body.condition']);
  assert.is((await ruleProblems({ asset: 't', condition: { outsideArea: { latitude: 51, longitude: 3.7, radiusMeters: 500 } } }, ctx)).length, 2, 'a line per profile it does not fit (number, integer)');
  assert.equal(await paths({ asset: 'on', condition: { silentFor: 'PT15M' } }, ctx), []);
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, clear: { equals: true } }, ctx), ['body.clear']);
});

test('durations, ranges and what silentFor does not take', async () => {
  const ctx = context({ t: [number] });
  assert.equal(await paths({ asset: 't', condition: { silentFor: 'PT0.5S' } }, ctx), ['body.condition.silentFor'], 'under a second');
  assert.equal(await paths({ asset: 't', condition: { silentFor: 'P400D' } }, ctx), ['body.condition.silentFor'], 'over a year');
  assert.equal(await paths({ asset: 't', condition: { silentFor: 'P1Y' } }, ctx), ['body.condition.silentFor']);
  assert.equal(await paths({ asset: 't', condition: { above: 1 }, for: 'PT0S' }, ctx), ['body.for']);
  assert.equal(await paths({ asset: 't', condition: { silentFor: 'PT1M' }, for: 'PT1M', clear: { above: 1 } }, ctx), ['body.for', 'body.clear']);
  assert.equal(await paths({ asset: 't', condition: { outside: [8, 2] } }, ctx), ['body.condition.outside']);
  assert.equal(await paths({ asset: 't', condition: { outside: [2, 2] } }, ctx), ['body.condition.outside']);
});

test('an asset no device has; listed devices without it; every problem at once, each once', async () => {
  assert.equal(await paths({ asset: 'nope', condition: { above: 1 } }, context({})), ['body.asset']);
  assert.equal(await paths({ asset: 't', devices: ['d1', 'd2'], condition: { above: 1 } }, context({ t: [number] }, ['d2'])), ['body.devices']);
  const problems = await ruleProblems({ asset: 'on', condition: { above: 1 }, for: 'P1M', clear: { below: 0 } }, context({ on: [bool, bool, { is: 'virtual', profile: { type: 'boolean' } }] }));
  assert.equal(problems.map((p) => p.path), ['body.for', 'body.condition', 'body.clear']);
  try {
    await checkRule({ asset: 'on', condition: { above: 1 } }, context({ on: [bool] }));
    assert.unreachable();
  } catch (error) {
    assert.ok(isFleetError(error));
    assert.is(error.code, 'VALIDATION_FAILED');
    assert.equal((error.detail as { errors: unknown[] }).errors.length, 1);
  }
});

test('actions: a command to an actuator with a value it takes; an integration of the same ground', async () => {
  const ctx = context({ t: [number], valve: [valve], fan: [number] }, [], { i1: 'g1', i2: 'g2' });
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, actions: [{ command: { asset: 'valve', value: true } }, { integration: 'i1' }] }, ctx), []);
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, actions: [{ command: { asset: 'valve', value: 'open' } }] }, ctx), ['body.actions/0/command/value']);
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, actions: [{ command: { asset: 'fan', value: 1 } }] }, ctx), ['body.actions/0/command/asset'], 'a sensor');
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, actions: [{ command: { asset: 'pump', value: 1 } }] }, ctx), ['body.actions/0/command/asset'], 'no such asset');
  assert.equal(await paths({ asset: 't', condition: { above: 8 }, actions: [{ integration: 'i2' }, { integration: 'i3' }] }, ctx), ['body.actions/0/integration', 'body.actions/1/integration'], 'another ground\'s, and none');
});

test.run();
