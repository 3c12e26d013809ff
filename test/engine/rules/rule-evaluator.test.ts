/**
 * The rule evaluator (engine/rules/RuleEvaluator.ts) on a real registry (PGlite in memory): verdicts
 * applied in each device's order whatever order the store finishes in; no registry call for a
 * state that changes nothing; a state judged again (a replay, a cold restart) changes nothing; rules
 * of other assets and devices, and rules waiting for timers (`for`, `silentFor`), judge nothing;
 * a rule change is followed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { createJsonLogger } from '../../../engine/kernel/logger.ts';
import { RuleEvaluator } from '../../../engine/rules/RuleEvaluator.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { RuleEvaluation } from '../../../engine/ports/alarmRegistry.ts';
import type { StateRow } from '../../../schemas/messages.ts';

let registry: Registry;
let groundId = '';
let deviceId = '';
let other = '';
const applied: RuleEvaluation[] = [];
const logger = createJsonLogger({ level: 'error', write: () => undefined });

function evaluator(): RuleEvaluator {
  return new RuleEvaluator({
    rules: registry,
    alarms: { evaluationStanding: (r, d) => registry.evaluationStanding(r, d), applyEvaluation: (e) => { applied.push(e); return registry.applyEvaluation(e); } },
    groundOf: async (id) => (await registry.getDevice(id))?.groundId,
    clock: systemClock,
    logger,
  });
}

let n = 0;
const row = (asset: string, value: unknown, ts: number, device = deviceId): StateRow => ({ deviceId: device, asset, ts, receivedAt: ts, value: value as StateRow['value'], uplinkId: `up${String(n++).padStart(6, '0')}`, seq: 0 });

/** Judges uplinks one after another, each released as soon as it is asked. */
async function judgeAll(e: RuleEvaluator, uplinks: StateRow[][]): Promise<void> {
  for (const rows of uplinks) await e.judgement(rows)?.();
}

test.before(async () => {
  registry = await createPgliteRegistry();
  const user = await registry.createUser({ name: 'u' });
  groundId = (await registry.createGround({ name: 'g', userId: user.entity.id })).id;
  const assets = [{ name: 't', is: 'sensor' as const, profile: { type: 'number' } }, { name: 'h', is: 'sensor' as const, profile: { type: 'number' } }];
  deviceId = (await registry.createDevice({ groundId, name: 'a', assets })).device.id;
  other = (await registry.createDevice({ groundId, name: 'b', assets })).device.id;
});

test.after(async () => {
  await registry.close();
});

test('verdicts in the device\'s order, whatever order the rows became durable in; a state that changes nothing costs no call', async () => {
  const rule = await registry.createRule({ groundId, name: 'warm', asset: 't', condition: { above: 8 }, severity: 'major', devices: [deviceId] });
  const e = evaluator();
  applied.length = 0;
  await judgeAll(e, [[row('t', 5, 1000)], [row('t', 6, 2000)], [row('h', 50, 2500)], [row('t', 7, 2600, other)]]);
  assert.is(applied.length, 0, 'nothing held, nothing was active: no registry call');
  const first = e.judgement([row('t', 9, 3000)])!;
  const second = e.judgement([row('t', 5, 4000)])!;
  const third = e.judgement([row('t', 10, 5000)])!;
  // The store finishes the later uplinks first.
  const done = [third(), second(), first()];
  const made = await Promise.all(done);
  assert.equal(made.map((events) => events.map((e) => [e.type, e.change, e.value, e.lastValue])), [[['alarm', 'raised', 10, 10]], [['alarm', 'cleared', 9, 9]], [['alarm', 'raised', 9, 9]]], 'each judgement answers the alarm changes it made, for topic events');
  assert.equal(applied.map((a) => [a.at, a.holds]), [[3000, true], [4000, false], [5000, true]], 'judged in the order asked');
  const alarms = await registry.listAlarms(groundId);
  assert.equal(alarms.map((a) => [a.ruleId, a.status, a.value, a.startedAt]), [[rule.id, 'active', 10, 5000], [rule.id, 'cleared', 9, 3000]]);
  await registry.deleteRule(rule.id);
  e.changed({ kind: 'rule-deleted', ruleId: rule.id, groundId });
});

test('judged again (a replay, or a cold restart): nothing changes', async () => {
  const rule = await registry.createRule({ groundId, name: 'humid', asset: 'h', condition: { outside: [30, 60] }, clear: { outside: [0, 90] }, severity: 'minor' });
  const uplinks = [[row('h', 70, 10_000)], [row('h', 40, 11_000)], [row('h', 80, 12_000)]];
  await judgeAll(evaluator(), uplinks);
  const before = (await registry.listAlarms(groundId)).filter((a) => a.ruleId === rule.id);
  assert.equal(before.map((a) => [a.status, a.count, a.lastValue]), [['active', 2, 80]], 'outside again while active: repeated');
  applied.length = 0;
  await judgeAll(evaluator(), uplinks);
  const after = (await registry.listAlarms(groundId)).filter((a) => a.ruleId === rule.id);
  assert.equal(after, before);
  assert.ok(applied.length <= uplinks.length);
  await registry.deleteRule(rule.id);
});

test('rules waiting for timers judge nothing yet; a changed rule is followed', async () => {
  const timed = await registry.createRule({ groundId, name: 'slow', asset: 't', condition: { above: 0 }, for: 'PT1M', severity: 'info', devices: [other] });
  const silent = await registry.createRule({ groundId, name: 'silent', asset: 't', condition: { silentFor: 'PT1M' }, severity: 'info', devices: [other] });
  const e = evaluator();
  applied.length = 0;
  await judgeAll(e, [[row('t', 100, 20_000, other)]]);
  assert.is(applied.length, 0);
  await registry.updateRule(timed.id, { for: null });
  e.changed({ kind: 'rule-changed', ruleId: timed.id, groundId });
  await judgeAll(e, [[row('t', 100, 21_000, other)]]);
  assert.equal(applied.map((a) => [a.ruleId, a.holds]), [[timed.id, true]]);
  await registry.deleteRule(timed.id);
  await registry.deleteRule(silent.id);
});

test('rules of every device and rules listing the device, on the same asset: each judges, oldest first; another device only by the first', async () => {
  const every = await registry.createRule({ groundId, name: 'every', asset: 't', condition: { above: 1000 }, severity: 'info' });
  const listed = await registry.createRule({ groundId, name: 'listed', asset: 't', condition: { above: 1000 }, severity: 'info', devices: [deviceId] });
  const e = evaluator();
  applied.length = 0;
  await judgeAll(e, [[row('t', 2000, 40_000)], [row('t', 2000, 40_001, other)]]);
  assert.equal(applied.map((a) => [a.ruleId, a.deviceId]), [[every.id, deviceId], [listed.id, deviceId], [every.id, other]]);
  await registry.deleteRule(every.id);
  await registry.deleteRule(listed.id);
});

test('a device of no ground (deleted) or rows of no rule: no judgement at all', async () => {
  const e = evaluator();
  applied.length = 0;
  await judgeAll(e, [[row('t', 100, 30_000, 'A'.repeat(22))], []]);
  assert.is(e.judgement([]), undefined);
  assert.is(applied.length, 0);
});

test.run();
