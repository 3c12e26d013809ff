/**
 * The rule evaluator (engine/rules/RuleEvaluator.ts) on a real registry (PGlite in memory): verdicts
 * applied in each device's order whatever order the store finishes in; no registry call for a
 * state that changes nothing; a state judged again (a replay, a cold restart) changes nothing; rules
 * of other assets and devices judge nothing; a rule change is followed. Timers (`for`, `silentFor`)
 * on a simulated clock: raised on time, by a state or by the timer, across a restart of the
 * evaluator, once with two evaluators.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
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

const T0 = Date.UTC(2026, 10, 28, 12);
const clock = new SimulatedClock(T0);
const raised: string[] = [];
const commands: string[] = [];

function evaluator(): RuleEvaluator {
  return new RuleEvaluator({
    rules: registry,
    alarms: {
      evaluationStanding: (r, d) => registry.evaluationStanding(r, d),
      applyEvaluation: (e) => { applied.push(e); return registry.applyEvaluation(e); },
      recordSightings: (s) => registry.recordSightings(s),
      fireDueTimers: (now, limit, lease) => registry.fireDueTimers(now, limit, lease),
      settleTimers: (f) => registry.settleTimers(f),
      recordProgress: (p, n) => registry.recordProgress(p, n),
    },
    groundOf: async (id) => (await registry.getDevice(id))?.groundId,
    clock,
    logger,
    timers: { graceMs: 0 },
    onAlarm: (change, alarm) => raised.push(`${change} ${alarm.deviceId === deviceId ? 'a' : alarm.deviceId === other ? 'b' : alarm.deviceId} ${alarm.startedAt - T0}`),
    command: async (c) => { commands.push(c.id); },
  });
}

let n = 0;
const row = (asset: string, value: unknown, ts: number, device = deviceId): StateRow => ({ deviceId: device, asset, ts, receivedAt: ts, value: value as StateRow['value'], uplinkId: `up${String(n++).padStart(6, '0')}`, seq: 0 });

/** Judges uplinks one after another, each released as soon as it is asked. */
async function judgeAll(e: RuleEvaluator, uplinks: StateRow[][]): Promise<void> {
  for (const rows of uplinks) await e.judgement(rows)?.();
}

test.before(async () => {
  registry = await createPgliteRegistry({ clock });
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

test('a changed rule is followed', async () => {
  const timed = await registry.createRule({ groundId, name: 'slow', asset: 't', condition: { above: 0 }, for: 'PT1M', severity: 'info', devices: [other] });
  const e = evaluator();
  applied.length = 0;
  await judgeAll(e, [[row('t', 100, 20_000, other)]]);
  assert.equal(applied.map((a) => [a.ruleId, a.holds]), [[timed.id, true]], 'held: the registry sets its timer');
  assert.equal(await registry.listAlarms(groundId, { deviceId: other }), [], 'not for a minute yet');
  await registry.updateRule(timed.id, { for: null, condition: { above: 50 } });
  e.changed({ kind: 'rule-changed', ruleId: timed.id, groundId });
  applied.length = 0;
  await judgeAll(e, [[row('t', 60, 21_000, other)]]);
  assert.equal(applied.map((a) => [a.ruleId, a.holds]), [[timed.id, true]]);
  assert.equal((await registry.listAlarms(groundId, { deviceId: other })).map((a) => [a.status, a.value]), [['active', 60]], 'raised at once without "for"');
  await registry.deleteRule(timed.id);
});

/** Moves the simulated clock (and the registry's) to `ms` after T0, then fires what is due. */
async function at(e: RuleEvaluator, ms: number): Promise<void> {
  clock.advance(T0 + ms - clock.now());
  await e.fireDue();
}

test('"for": raised by its timer when the condition held that long, not when a state that does not hold came first; by a state measured that long after', async () => {
  raised.length = 0;
  commands.length = 0;
  const rule = await registry.createRule({ groundId, name: 'hot for 2m', asset: 't', condition: { above: 8 }, for: 'PT2M', severity: 'major', devices: [deviceId, other], actions: [{ command: { asset: 't', value: 1 } }] });
  const e = evaluator();
  const base = clock.now() - T0 + 1000;
  // a: holds at +0 and +60 s, then nothing: its timer raises it at +120 s with the first value.
  // b: holds at +0, then 5 at +30 s: no alarm.
  await judgeAll(e, [[row('t', 9, T0 + base)], [row('t', 9.5, T0 + base, other)], [row('t', 10, T0 + base + 60_000)], [row('t', 5, T0 + base + 30_000, other)]]);
  await at(e, base + 119_000);
  assert.equal(raised, [], 'not yet');
  await at(e, base + 120_000);
  assert.equal(raised, [`raised a ${base + 120_000}`], 'a: when its condition had held for two minutes');
  const [alarm] = await registry.listAlarms(groundId, { deviceId, status: 'active' });
  assert.equal([alarm.value, alarm.startedAt - T0], [9, base + 120_000]);
  assert.equal(commands, [`${alarm.id}-0`], 'its command action ran');
  await at(e, base + 600_000);
  assert.equal(raised.length, 1, 'fired once; b never held long enough');
  // b: holds at +700 s and again, measured 2 min later: raised by that state.
  await judgeAll(e, [[row('t', 11, T0 + base + 700_000, other)], [row('t', 12, T0 + base + 820_000, other)]]);
  assert.equal(raised.slice(1), [`raised b ${base + 820_000}`]);
  await judgeAll(e, [[row('t', 1, T0 + base + 830_000)]]);
  assert.equal(raised.slice(2), [`cleared a ${base + 120_000}`]);
  await registry.deleteRule(rule.id);
  await e.stop();
});

test('"silentFor": every covered device watched from the rule\'s creation, a sighting moves its timer and ends the silence; across a restart; a device created later; once with two evaluators', async () => {
  raised.length = 0;
  const start = clock.now() - T0;
  const rule = await registry.createRule({ groundId, name: 'quiet', asset: 'h', condition: { silentFor: 'PT5M' }, severity: 'warning' });
  const first = evaluator();
  // a reports at +1 min; b never does.
  await judgeAll(first, [[{ ...row('h', 40, T0 + start + 60_000), receivedAt: T0 + start + 60_000 }]]);
  await first.recordSightings();
  await at(first, start + 299_000);
  assert.equal(raised, []);
  await first.stop();
  // A restart: a new evaluator, nothing in memory.
  const second = evaluator();
  const third = evaluator();
  await at(second, start + 300_000);
  await third.fireDue();
  assert.equal(raised, [`raised b ${start + 300_000}`], 'b: silent five minutes after the rule was made, once');
  const late = (await registry.createDevice({ groundId, name: 'late', assets: [{ name: 'h', is: 'sensor', profile: { type: 'number' } }] })).device.id;
  await at(second, start + 360_000);
  await third.fireDue();
  assert.equal(raised.slice(1), [`raised a ${start + 360_000}`], 'a: five minutes after its last state');
  // A replay of a's old state does not end its silence; a new one does.
  await judgeAll(second, [[{ ...row('h', 40, T0 + start + 60_000), receivedAt: T0 + start + 60_000 }]]);
  await second.recordSightings();
  assert.equal(raised.length, 2);
  await judgeAll(second, [[{ ...row('h', 41, T0 + start + 400_000), receivedAt: T0 + start + 400_000 }]]);
  await second.recordSightings();
  assert.equal(raised.slice(2), [`cleared a ${start + 360_000}`]);
  await at(second, start + 660_000);
  await third.fireDue();
  assert.equal(raised.slice(3), [`raised ${late} ${start + 600_000}`], 'the device created later (at +5 min): five minutes after its creation');
  await at(second, start + 700_000);
  assert.equal(raised.slice(4), [`raised a ${start + 700_000}`], 'a again, five minutes after its new state');
  const alarms = await registry.listAlarms(groundId, { status: 'active' });
  assert.equal(alarms.filter((x) => x.ruleId === rule.id).map((x) => [x.deviceId === deviceId, x.value, x.count]).sort(), [[false, null, 1], [false, null, 1], [true, null, 1]]);
  await second.stop();
  await third.stop();
  await registry.deleteRule(rule.id);
  await registry.deleteDevice(late);
});

test('each condition kind with "for", with and without clear: pending, raised by its timer, then cleared', async () => {
  const kinds: { condition: any; clear?: any; holds: unknown; between?: unknown; clears: unknown; profile: Record<string, unknown> }[] = [
    { condition: { above: 8 }, holds: 9, clears: 3, profile: { type: 'number' } },
    { condition: { above: 8 }, clear: { below: 6 }, holds: 9, between: 7, clears: 5, profile: { type: 'number' } },
    { condition: { below: 2 }, holds: 1, clears: 3, profile: { type: 'number' } },
    { condition: { outside: [0, 10] }, clear: { below: 5 }, holds: 11, between: 7, clears: 3, profile: { type: 'number' } },
    { condition: { equals: 'open' }, holds: 'open', clears: 'closed', profile: { type: 'string' } },
    { condition: { outsideArea: { latitude: 51, longitude: 4, radiusMeters: 1000 } }, holds: { latitude: 52, longitude: 4 }, clears: { latitude: 51, longitude: 4 }, profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } } },
  ];
  for (const [i, kind] of kinds.entries()) {
    const device = (await registry.createDevice({ groundId, name: `kind${i}`, assets: [{ name: 'k', is: 'sensor', profile: kind.profile }] })).device.id;
    const rule = await registry.createRule({ groundId, name: `kind ${i}`, asset: 'k', condition: kind.condition, ...(kind.clear === undefined ? {} : { clear: kind.clear }), for: 'PT1M', severity: 'minor', devices: [device] });
    const e = evaluator();
    const t = clock.now();
    const label = JSON.stringify([kind.condition, kind.clear]);
    const active = async () => (await registry.listAlarms(groundId, { deviceId: device })).filter((a) => a.status === 'active');
    await judgeAll(e, [[row('k', kind.holds, t, device)]]);
    await at(e, t - T0 + 59_000);
    assert.equal(await active(), [], `${label}: pending a minute`);
    await at(e, t - T0 + 60_000);
    assert.equal((await active()).map((a) => [a.value, a.startedAt - t]), [[kind.holds, 60_000]], `${label}: raised by its timer`);
    if (kind.between !== undefined) {
      await judgeAll(e, [[row('k', kind.between, t + 61_000, device)]]);
      assert.is((await active()).length, 1, `${label}: the clear condition does not hold yet`);
    }
    await judgeAll(e, [[row('k', kind.clears, t + 62_000, device)]]);
    assert.equal(await active(), [], `${label}: cleared`);
    await e.stop();
    await registry.deleteRule(rule.id);
  }
});

test('rules of every device and rules listing the device, on the same asset: each judges, oldest first; another device only by the first', async () => {
  const every = await registry.createRule({ groundId, name: 'every', asset: 't', condition: { above: 1000 }, severity: 'info' });
  clock.advance(1); // created a millisecond later: the older rule judges first
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
