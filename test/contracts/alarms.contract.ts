/**
 * Contract of the alarms port (engine/ports/alarmRegistry.ts): evaluations raise, repeat, update and
 * clear alarms once per state (stale ones change nothing, also when applied at once), the standing
 * of each (rule, device), listing by pages and filters, acknowledgement and clearing by members,
 * refusals of malformed input; the timers of `for` and `silentFor` (set by evaluations, sightings and
 * the rules themselves, fired once, held for their actions). Runs on the harness of
 * registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { Alarm, AlarmRegistry, FleetRegistry, PrincipalRegistry, RuleEvaluation, RuleRegistry } from '../../engine/ports/registry.ts';
import type { TimerFiring } from '../../engine/ports/alarmRegistry.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, START, type RegistryFactory, type RegistryHarness } from './registry.contract.ts';

const MISSING = 'A'.repeat(22);

type Registry = AlarmRegistry & RuleRegistry & FleetRegistry & PrincipalRegistry;

export function alarmsContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<Registry>(`alarms contract: ${name}`, factory);

  /** A ground with a device and a rule on it. */
  const setup = async (r: Registry, devices = 1) => {
    const { user, ground } = await ownedGround(r);
    const made = [];
    for (let i = 0; i < devices; i++) made.push((await r.createDevice({ groundId: ground.id, name: `d${i}` })).device);
    const rule = await r.createRule({ groundId: ground.id, name: 'too hot', asset: 'temp', condition: { above: 30 }, severity: 'major' });
    return { user, ground, device: made[0], devices: made, rule };
  };

  /** An evaluation of `rule` for `deviceId` at START + `t` (the state id follows the time). */
  const judged = (rule: { id: string; groundId: string }, deviceId: string, t: number, holds: boolean, clears = false, value: unknown = 31, stateId?: string): RuleEvaluation => ({
    ruleId: rule.id, groundId: rule.groundId, deviceId, asset: 'temp', severity: 'major',
    at: START + t, stateId: stateId ?? `up${String(t).padStart(6, '0')}/temp/${START + t}/0`, value, holds, clears,
  });

  const alarmCount = async (h: RegistryHarness, ruleId: string) =>
    Number((await h.sql('SELECT count(*) AS n FROM alarms WHERE rule_id = $1', [ruleId]))[0].n);

  test('raised, updated, none, repeated, cleared, then raised again as a new alarm', async ({ r, h, clock }) => {
    const { ground, device, rule } = await setup(r);
    assert.is(await r.evaluationStanding(rule.id, device.id), undefined, 'no standing before the first evaluation');

    clock.advance(5);
    const raised = await r.applyEvaluation(judged(rule, device.id, 10, true, false, 31));
    assert.is(raised.change, 'raised');
    const alarm = raised.alarm!;
    assert.match(alarm.id, ID_RE);
    assert.equal(alarm, {
      id: alarm.id, ruleId: rule.id, groundId: ground.id, deviceId: device.id, asset: 'temp', severity: 'major',
      status: 'active', acknowledged: false, startedAt: START + 10, value: 31, lastValue: 31, count: 1, updatedAt: clock.now(),
    });
    assert.not.ok('clearedAt' in alarm || 'acknowledgedAt' in alarm || 'acknowledgedBy' in alarm, 'absent fields stay absent');
    assert.equal(await r.getAlarm(alarm.id), alarm);
    assert.equal(await r.evaluationStanding(rule.id, device.id), { holding: true, at: START + 10, stateId: judged(rule, device.id, 10, true).stateId, active: true });

    clock.advance(5);
    const updated = await r.applyEvaluation(judged(rule, device.id, 20, true, false, 32.5));
    assert.is(updated.change, 'updated');
    assert.equal(updated.alarm, { ...alarm, lastValue: 32.5, updatedAt: clock.now() });

    clock.advance(5);
    const none = await r.applyEvaluation(judged(rule, device.id, 30, false, false, 29));
    assert.equal(none, { change: 'none' });
    assert.equal(await r.getAlarm(alarm.id), updated.alarm, 'stopped holding short of clearing: unchanged');
    assert.equal(await r.evaluationStanding(rule.id, device.id), { holding: false, at: START + 30, stateId: judged(rule, device.id, 30, false).stateId, active: true });

    clock.advance(5);
    const repeated = await r.applyEvaluation(judged(rule, device.id, 40, true, false, 33));
    assert.is(repeated.change, 'repeated');
    assert.equal(repeated.alarm, { ...alarm, lastValue: 33, count: 2, updatedAt: clock.now() });

    clock.advance(5);
    const cleared = await r.applyEvaluation(judged(rule, device.id, 50, false, true, 20));
    assert.is(cleared.change, 'cleared');
    assert.equal(cleared.alarm, { ...repeated.alarm!, status: 'cleared', clearedAt: START + 50, updatedAt: clock.now() });
    assert.equal(await r.evaluationStanding(rule.id, device.id), { holding: false, at: START + 50, stateId: judged(rule, device.id, 50, false).stateId, active: false });

    assert.equal(await r.applyEvaluation(judged(rule, device.id, 55, false, true, 20)), { change: 'none' }, 'nothing active to clear');

    clock.advance(5);
    const again = await r.applyEvaluation(judged(rule, device.id, 60, true, false, { deg: 40 }));
    assert.is(again.change, 'raised');
    assert.is.not(again.alarm!.id, alarm.id, 'a new alarm');
    assert.equal(again.alarm, { ...alarm, id: again.alarm!.id, startedAt: START + 60, value: { deg: 40 }, lastValue: { deg: 40 }, updatedAt: clock.now() });
    assert.equal(await r.getAlarm(alarm.id), cleared.alarm, 'the cleared one is kept as it was');
    assert.is(await alarmCount(h, rule.id), 2);
  });

  test('stale: the same evaluation twice, an older one after a newer, the same time with a smaller state id', async ({ r, h }) => {
    const { device, rule } = await setup(r);
    const first = judged(rule, device.id, 100, true, false, 31, 'b/temp/1');
    const raised = await r.applyEvaluation(first);
    assert.is(raised.change, 'raised');
    const snapshot = async () => ({ alarms: await h.sql('SELECT * FROM alarms WHERE rule_id = $1 ORDER BY id', [rule.id]), standing: await r.evaluationStanding(rule.id, device.id) });
    const before = await snapshot();

    assert.equal(await r.applyEvaluation(first), { change: 'stale' }, 'the same evaluation again');
    assert.equal(await r.applyEvaluation({ ...first, holds: false, clears: true }), { change: 'stale' }, 'the same state judged otherwise');
    assert.equal(await r.applyEvaluation(judged(rule, device.id, 99, false, true, 1, 'z/temp/9')), { change: 'stale' }, 'an older time');
    assert.equal(await r.applyEvaluation(judged(rule, device.id, 100, false, true, 1, 'a/temp/9')), { change: 'stale' }, 'the same time, a smaller state id');
    assert.equal(await snapshot(), before, 'nothing changed');

    const later = await r.applyEvaluation(judged(rule, device.id, 100, false, true, 1, 'c/temp/1'));
    assert.is(later.change, 'cleared', 'the same time with a greater state id is later');
  });

  test('a rule without clear: clears is the condition not holding', async ({ r }) => {
    const { device, rule } = await setup(r);
    const at = (t: number, holds: boolean) => judged(rule, device.id, t, holds, !holds);
    assert.is((await r.applyEvaluation(at(1, true))).change, 'raised');
    assert.is((await r.applyEvaluation(at(2, true))).change, 'updated');
    assert.is((await r.applyEvaluation(at(3, false))).change, 'cleared');
    assert.is((await r.applyEvaluation(at(4, false))).change, 'none');
    assert.is((await r.applyEvaluation(at(5, true))).change, 'raised');
  });

  test('(rule, device) pairs are independent; at most one alarm of a pair is active', async ({ r, h }) => {
    const { ground, devices: [a, b], rule } = await setup(r, 2);
    const other = await r.createRule({ groundId: ground.id, name: 'too cold', asset: 'temp', condition: { below: 0 }, severity: 'minor' });
    assert.is((await r.applyEvaluation(judged(rule, a.id, 1, true))).change, 'raised');
    assert.is((await r.applyEvaluation(judged(rule, b.id, 1, true))).change, 'raised', 'another device');
    assert.is((await r.applyEvaluation(judged(other, a.id, 1, true))).change, 'raised', 'another rule');
    assert.is((await r.applyEvaluation(judged(rule, b.id, 2, false, true))).change, 'cleared');
    assert.equal(await r.evaluationStanding(rule.id, a.id), { holding: true, at: START + 1, stateId: judged(rule, a.id, 1, true).stateId, active: true });
    assert.equal(await r.evaluationStanding(rule.id, b.id), { holding: false, at: START + 2, stateId: judged(rule, b.id, 2, true).stateId, active: false });
    assert.equal((await r.evaluationStanding(other.id, a.id))?.active, true);
    assert.is(await r.evaluationStanding(other.id, b.id), undefined);
    // The database refuses a second active alarm of a pair, whoever writes it.
    const [row] = await h.sql('SELECT * FROM alarms WHERE rule_id = $1 AND device_id = $2', [rule.id, a.id]);
    const copy = await h.sql(
      `INSERT INTO alarms (id, rule_id, ground_id, device_id, asset, severity, status, started_at, value, last_value, count, updated_at)
       VALUES ($1, $2, $3, $4, 'temp', 'major', 'active', 1, '1', '1', 1, 1)`,
      [MISSING, rule.id, ground.id, a.id],
    ).then(() => 'inserted', (e: Error) => e.message);
    assert.is.not(copy, 'inserted');
    assert.is(row.status, 'active');
    assert.is(Number((await h.sql("SELECT count(*) AS n FROM alarms WHERE status = 'active' AND rule_id = $1 AND device_id = $2", [rule.id, a.id]))[0].n), 1);
  });

  test('values round-trip as JSON', async ({ r }) => {
    const { device, rule } = await setup(r);
    const values: unknown[] = [0, -1.5, 1e21, 'text ünïcode', true, false, null, { a: 1, nested: { list: [1, 'x', null] } }, [1, [2, { b: false }]], ''];
    let t = 0;
    for (const value of values) {
      t += 2;
      const raised = await r.applyEvaluation(judged(rule, device.id, t, true, false, value));
      assert.is(raised.change, 'raised', JSON.stringify(value));
      assert.equal(raised.alarm!.value, value);
      assert.equal((await r.getAlarm(raised.alarm!.id))!.lastValue, value);
      assert.is((await r.applyEvaluation(judged(rule, device.id, t + 1, false, true))).change, 'cleared');
    }
  });

  test('list: newest first (started time, then id), by pages and filters; another ground\'s never', async ({ r, clock }) => {
    const { user, ground, devices: [a, b], rule } = await setup(r, 2);
    const { ground: other } = await ownedGround(r, 'other');
    const theirs = await r.createDevice({ groundId: other.id, name: 'x' });
    const theirRule = await r.createRule({ groundId: other.id, name: 'r', asset: 'temp', condition: { above: 1 }, severity: 'info' });
    await r.applyEvaluation(judged(theirRule, theirs.device.id, 5, true));

    const made: Alarm[] = [];
    // Raised and cleared at times 10, 20, 20, 30 ... on both devices: some share a start time.
    const times = [10, 20, 20, 30, 40, 40];
    for (const [i, t] of times.entries()) {
      const device = i % 2 === 0 ? a : b;
      const raised = await r.applyEvaluation(judged(rule, device.id, t, true, false, i, `s${i}`));
      assert.is(raised.change, 'raised');
      made.push(raised.alarm!);
      if (i < times.length - 2) {
        const cleared = await r.applyEvaluation(judged(rule, device.id, t + 1, false, true, i, `s${i}`));
        made[i] = cleared.alarm!;
      }
    }
    clock.advance(1);
    made[0] = (await r.acknowledgeAlarm(made[0].id, user.entity.id, START + 100)).alarm;
    made[5] = (await r.acknowledgeAlarm(made[5].id, user.entity.id, START + 100)).alarm;
    const newestFirst = [...made].sort((x, y) => y.startedAt - x.startedAt || (x.id < y.id ? 1 : -1));

    const all = await r.listAlarms(ground.id);
    assert.equal(all, newestFirst);
    const first = await r.listAlarms(ground.id, { limit: 2 });
    assert.equal(first, all.slice(0, 2));
    const cursor = (x: Alarm) => ({ startedAt: x.startedAt, id: x.id });
    const second = await r.listAlarms(ground.id, { limit: 2, before: cursor(first[1]) });
    assert.equal(second, all.slice(2, 4));
    const rest = await r.listAlarms(ground.id, { before: cursor(second[1]) });
    assert.equal([...first, ...second, ...rest], all);
    assert.equal(await r.listAlarms(ground.id, { before: cursor(all[all.length - 1]) }), []);

    assert.equal(await r.listAlarms(ground.id, { status: 'active' }), all.filter((x) => x.status === 'active'));
    assert.equal(await r.listAlarms(ground.id, { status: 'cleared' }), all.filter((x) => x.status === 'cleared'));
    assert.equal(await r.listAlarms(ground.id, { acknowledged: true }), all.filter((x) => x.acknowledged));
    assert.equal(await r.listAlarms(ground.id, { acknowledged: false }), all.filter((x) => !x.acknowledged));
    assert.equal(await r.listAlarms(ground.id, { deviceId: b.id }), all.filter((x) => x.deviceId === b.id));
    assert.equal(await r.listAlarms(ground.id, { deviceId: b.id, status: 'active', acknowledged: true }), all.filter((x) => x.deviceId === b.id && x.status === 'active' && x.acknowledged));
    assert.equal(await r.listAlarms(ground.id, { deviceId: theirs.device.id }), [], 'another ground\'s device');
    assert.equal((await r.listAlarms(other.id)).map((x) => x.deviceId), [theirs.device.id]);

    assert.equal(await r.listAlarms(MISSING), []);
    for (const bad of MALFORMED_IDS) assert.equal(await r.listAlarms(any(bad)), []);
    await rejects(r.listAlarms(ground.id, { limit: 0 }), 'VALIDATION_FAILED');
    await rejects(r.listAlarms(ground.id, { status: any('open') as never }), 'VALIDATION_FAILED', 'status');
    await rejects(r.listAlarms(ground.id, any({ extra: 1 }) as never), 'VALIDATION_FAILED');
  });

  test('acknowledge keeps the first; members clear; unknown ids are NOT_FOUND; malformed ones refused', async ({ r, clock }) => {
    const { user, device, rule } = await setup(r);
    const second = await r.createUser({ name: 'second' });
    const { alarm } = await r.applyEvaluation(judged(rule, device.id, 1, true));
    clock.advance(10);
    const { alarm: acked, changed } = await r.acknowledgeAlarm(alarm!.id, user.entity.id, START + 7);
    assert.ok(changed);
    assert.equal(acked, { ...alarm!, acknowledged: true, acknowledgedAt: START + 7, acknowledgedBy: user.entity.id, updatedAt: clock.now() });
    clock.advance(10);
    assert.equal(await r.acknowledgeAlarm(alarm!.id, second.entity.id, START + 9), { alarm: acked, changed: false }, 'the first acknowledgement is kept');
    assert.equal(await r.getAlarm(alarm!.id), acked);

    clock.advance(10);
    const { alarm: cleared, changed: clearedNow } = await r.clearAlarm(alarm!.id, START + 20);
    assert.ok(clearedNow);
    assert.equal(cleared, { ...acked, status: 'cleared', clearedAt: START + 20, updatedAt: clock.now() });
    clock.advance(10);
    assert.equal(await r.clearAlarm(alarm!.id, START + 30), { alarm: cleared, changed: false }, 'already cleared: unchanged');
    assert.equal(await r.evaluationStanding(rule.id, device.id), { holding: true, at: START + 1, stateId: judged(rule, device.id, 1, true).stateId, active: false });
    assert.is((await r.applyEvaluation(judged(rule, device.id, 2, true))).change, 'raised', 'still holding after a member cleared it: raised anew');

    await rejects(r.acknowledgeAlarm(MISSING, user.entity.id, START), 'NOT_FOUND', 'alarmId');
    await rejects(r.clearAlarm(MISSING, START), 'NOT_FOUND', 'alarmId');
    await rejects(r.acknowledgeAlarm(any('bad'), user.entity.id, START), 'VALIDATION_FAILED', 'alarmId');
    await rejects(r.acknowledgeAlarm(alarm!.id, any('not-an-id'), START), 'VALIDATION_FAILED', 'userId');
    await rejects(r.acknowledgeAlarm(alarm!.id, user.entity.id, Number.NaN), 'VALIDATION_FAILED', 'at');
    await rejects(r.clearAlarm(any(null), START), 'VALIDATION_FAILED', 'alarmId');
    await rejects(r.clearAlarm(alarm!.id, -1), 'VALIDATION_FAILED', 'at');
  });

  test('members acknowledging or clearing one alarm at once: exactly one call changed it', async ({ r }) => {
    const { user, device, rule } = await setup(r);
    for (let round = 0; round < 3; round++) {
      const { alarm } = await r.applyEvaluation(judged(rule, device.id, 10 * round + 1, true));
      const acks = await Promise.all(Array.from({ length: 5 }, (_, i) => r.acknowledgeAlarm(alarm!.id, user.entity.id, START + 10 * round + i)));
      assert.is(acks.filter((a) => a.changed).length, 1, 'one acknowledgement');
      assert.ok(acks.every((a) => a.alarm.acknowledged && a.alarm.acknowledgedAt === acks.find((b) => b.changed)!.alarm.acknowledgedAt));
      const clears = await Promise.all(Array.from({ length: 5 }, (_, i) => r.clearAlarm(alarm!.id, START + 10 * round + 5 + i)));
      assert.is(clears.filter((c) => c.changed).length, 1, 'one clearing');
      assert.ok(clears.every((c) => c.alarm.status === 'cleared'));
      await r.applyEvaluation(judged(rule, device.id, 10 * round + 2, false));
    }
  });

  test('lookups of malformed or unknown ids answer undefined', async ({ r }) => {
    const { device, rule } = await setup(r);
    assert.is(await r.getAlarm(MISSING), undefined);
    assert.is(await r.evaluationStanding(MISSING, device.id), undefined);
    assert.is(await r.evaluationStanding(rule.id, MISSING), undefined);
    for (const bad of MALFORMED_IDS) {
      assert.is(await r.getAlarm(any(bad)), undefined);
      assert.is(await r.evaluationStanding(any(bad), device.id), undefined);
      assert.is(await r.evaluationStanding(rule.id, any(bad)), undefined);
    }
  });

  test('a malformed evaluation is VALIDATION_FAILED naming the field, and changes nothing', async ({ r, h }) => {
    const { device, rule } = await setup(r);
    const good = judged(rule, device.id, 1, true);
    const { value: _v, ...withoutValue } = good;
    const { holds: _h, ...withoutHolds } = good;
    const cases: Array<[unknown, string]> = [
      [{ ...good, severity: 'fatal' }, 'severity'],
      [withoutHolds, 'holds'],
      [withoutValue, 'value'],
      [{ ...good, extra: 1 }, 'extra'],
      [{ ...good, at: Number.NaN }, 'at'],
      [{ ...good, at: -1 }, 'at'],
      [{ ...good, at: 1.5 }, 'at'],
      [{ ...good, ruleId: 'not-an-id' }, 'ruleId'],
      [{ ...good, deviceId: 42 }, 'deviceId'],
      [{ ...good, stateId: '' }, 'stateId'],
      [{ ...good, asset: 'a/b' }, 'asset'],
      [{ ...good, holds: 'yes' }, 'holds'],
      [{ ...good, value: undefined }, 'value'],
      [{ ...good, value: 2n }, 'value'],
    ];
    for (const [input, field] of cases) {
      const e = await rejects(r.applyEvaluation(input as RuleEvaluation), 'VALIDATION_FAILED');
      const got = String(e.detail?.field);
      assert.ok(got === field || got.startsWith(`${field}.`), `${field}: got ${got}`);
    }
    assert.equal(await h.sql('SELECT * FROM alarms WHERE rule_id = $1', [rule.id]), []);
    assert.equal(await h.sql('SELECT * FROM rule_standings WHERE rule_id = $1', [rule.id]), []);
    await rejects(r.applyEvaluation(judged({ id: MISSING, groundId: rule.groundId }, device.id, 1, true)), 'NOT_FOUND', 'ruleId');
    assert.equal(await h.sql('SELECT * FROM rule_standings WHERE rule_id = $1', [MISSING]), [], 'nothing left of a refused evaluation');
  });

  test('a deleted rule takes its standings, not its alarms; a deleted ground takes its alarms', async ({ r, h }) => {
    const { ground, devices: [a, b], rule } = await setup(r, 2);
    const { alarm } = await r.applyEvaluation(judged(rule, a.id, 1, true));
    await r.applyEvaluation(judged(rule, b.id, 1, false, true));
    assert.ok(await r.deleteRule(rule.id));
    assert.is(await r.evaluationStanding(rule.id, a.id), undefined);
    assert.is(await r.evaluationStanding(rule.id, b.id), undefined);
    assert.equal(await h.sql('SELECT * FROM rule_standings WHERE rule_id = $1', [rule.id]), []);
    assert.equal(await r.getAlarm(alarm!.id), alarm, 'the alarm outlives its rule');
    assert.equal(await r.listAlarms(ground.id), [alarm!]);
    await h.sql('DELETE FROM devices WHERE ground_id = $1', [ground.id]);
    await h.sql('DELETE FROM grounds WHERE id = $1', [ground.id]);
    assert.is(await r.getAlarm(alarm!.id), undefined);
  });

  test('the same evaluation applied twice at once: one raised, one stale, one alarm', async ({ r, h }) => {
    const { devices, rule } = await setup(r, 3);
    for (const [i, device] of devices.entries()) {
      // The first evaluation of a pair (its standing is created) and a later one (it exists).
      for (const t of [10, 20]) {
        const evaluation = judged(rule, device.id, t + i, t === 10, t === 20);
        const outcomes = await Promise.all([r.applyEvaluation(evaluation), r.applyEvaluation(evaluation)]);
        const changes = outcomes.map((o) => o.change).sort();
        assert.equal(changes, [t === 10 ? 'raised' : 'cleared', 'stale']);
      }
      assert.is(Number((await h.sql('SELECT count(*) AS n FROM alarms WHERE rule_id = $1 AND device_id = $2', [rule.id, device.id]))[0].n), 1);
    }
    const many = await Promise.all(Array.from({ length: 6 }, (_, i) => r.applyEvaluation(judged(rule, devices[0].id, 100 + (i % 2), true, false, i, 'same'))));
    const raisedOrKept = many.filter((o) => o.change !== 'stale');
    assert.ok(raisedOrKept.length >= 1 && raisedOrKept.length <= 2, `applied ${raisedOrKept.length}`);
    assert.is(raisedOrKept.filter((o) => o.change === 'raised').length, 1);
    assert.is(Number((await h.sql("SELECT count(*) AS n FROM alarms WHERE status = 'active' AND rule_id = $1", [rule.id]))[0].n), 1);
  });

  const TEMP = [{ name: 'temp', is: 'sensor' as const, profile: { type: 'number' } }];
  /** The firings of `rules` (the suite's registry also holds the timers of its other tests). */
  const of = (firings: readonly TimerFiring[], ...rules: { id: string }[]) => firings.filter((f) => rules.some((rule) => rule.id === f.ruleId));
  const activeOf = async (h: RegistryHarness, ruleId: string) =>
    (await h.sql("SELECT device_id FROM alarms WHERE rule_id = $1 AND status = 'active' ORDER BY device_id", [ruleId])).map((row) => row.device_id as string);

  test('"for": a holding evaluation is pending and sets a timer; the timer raises it with the first value, once; a state that does not hold first ends it', async ({ r, h, clock }) => {
    const { ground, devices } = await setup(r, 2);
    const rule = await r.createRule({ groundId: ground.id, name: 'hot for a minute', asset: 'temp', condition: { above: 30 }, for: 'PT1M', severity: 'major' });
    const [a, b] = devices;
    const base = clock.now() - START;
    assert.is((await r.applyEvaluation(judged(rule, a.id, base, true, false, 31))).change, 'pending');
    assert.is((await r.applyEvaluation(judged(rule, a.id, base + 10_000, true, false, 35))).change, 'pending', 'still holding: still pending, the timer from the first');
    assert.is((await r.applyEvaluation(judged(rule, b.id, base, true, false, 40))).change, 'pending');
    assert.is((await r.applyEvaluation(judged(rule, b.id, base + 20_000, false, true, 20))).change, 'none', 'b stopped holding: its timer ends');
    assert.equal(of(await r.fireDueTimers(START + base + 59_999, 100, 60_000), rule), [], 'not due yet');
    clock.advance(70_000);
    const fired = of(await r.fireDueTimers(START + base + 60_000, 100, 60_000), rule);
    assert.equal(fired.map((f) => [f.ruleId, f.deviceId, f.alarm.startedAt, f.alarm.value, f.alarm.status, f.alarm.count]), [[rule.id, a.id, START + base + 60_000, 31, 'active', 1]]);
    assert.is(fired[0].lease, clock.now() + 60_000);
    await r.settleTimers(fired);
    assert.equal(of(await r.fireDueTimers(START + base + 10_000_000, 100, 60_000), rule), [], 'fired once; b never');
    assert.equal(await activeOf(h, rule.id), [a.id]);
    // A holding state measured a minute after the first of its run raises it at once.
    assert.is((await r.applyEvaluation(judged(rule, b.id, base + 100_000, true, false, 41))).change, 'pending');
    const byState = await r.applyEvaluation(judged(rule, b.id, base + 160_000, true, false, 42));
    assert.equal([byState.change, byState.alarm?.startedAt, byState.alarm?.value], ['raised', START + base + 160_000, 42]);
    assert.equal(of(await r.fireDueTimers(START + base + 10_000_000, 100, 60_000), rule), [], 'raised by the state: its timer is gone');
  });

  test('a fired timer not settled within its lease fires again with the same alarm; settled, never', async ({ r, clock }) => {
    const { ground, devices } = await setup(r, 1);
    const rule = await r.createRule({ groundId: ground.id, name: 'hot for a second', asset: 'temp', condition: { above: 30 }, for: 'PT1S', severity: 'major' });
    const base = clock.now() - START;
    await r.applyEvaluation(judged(rule, devices[0].id, base, true));
    const first = of(await r.fireDueTimers(START + base + 1000, 100, 5000), rule);
    assert.is(first.length, 1);
    assert.equal(of(await r.fireDueTimers(clock.now() + 4999, 100, 5000), rule), [], 'held by the lease');
    clock.advance(5000);
    const again = of(await r.fireDueTimers(clock.now(), 100, 5000), rule);
    assert.equal(again.map((f) => f.alarm.id), [first[0].alarm.id], 'the same alarm: its actions run again, with the same ids');
    await r.settleTimers(first);
    assert.is(of(await r.fireDueTimers(clock.now() + 10_000, 100, 5000), rule).length, 1, 'an old firing settles nothing');
    clock.advance(10_000);
    const last = of(await r.fireDueTimers(clock.now(), 100, 5000), rule);
    await r.settleTimers(last);
    assert.equal(of(await r.fireDueTimers(clock.now() + 100_000, 100, 5000), rule), []);
  });

  test('"silentFor": the covered devices are watched from the rule\'s creation; a sighting moves the timer, an older one does nothing, a newer one ends the silence; devices created later are watched', async ({ r, h, clock }) => {
    const { ground } = await ownedGround(r);
    const a = (await r.createDevice({ groundId: ground.id, name: 'a', assets: TEMP })).device;
    const b = (await r.createDevice({ groundId: ground.id, name: 'b', assets: TEMP })).device;
    await r.createDevice({ groundId: ground.id, name: 'no temp' });
    const created = clock.now();
    const rule = await r.createRule({ groundId: ground.id, name: 'quiet', asset: 'temp', condition: { silentFor: 'PT10M' }, severity: 'warning' });
    const listed = await r.createRule({ groundId: ground.id, name: 'quiet b', asset: 'temp', condition: { silentFor: 'PT20M' }, severity: 'info', devices: [b.id] });
    assert.equal(await r.recordSightings([{ ruleId: rule.id, deviceId: a.id, receivedAt: created + 60_000 }, { ruleId: rule.id, deviceId: a.id, receivedAt: created + 30_000 }]), []);
    clock.advance(600_000);
    const first = of(await r.fireDueTimers(created + 600_000, 100, 60_000), rule, listed);
    assert.equal(first.map((f) => [f.ruleId, f.deviceId, f.alarm.startedAt, f.alarm.value, f.alarm.lastValue, f.alarm.asset, f.alarm.severity]), [[rule.id, b.id, created + 600_000, null, null, 'temp', 'warning']], 'b: silent since the rule was made; a: seen at +1 min');
    await r.settleTimers(first);
    const c = (await r.createDevice({ groundId: ground.id, name: 'c', assets: TEMP })).device;
    clock.advance(60_000);
    const second = of(await r.fireDueTimers(created + 660_000, 100, 60_000), rule, listed);
    assert.equal(second.map((f) => [f.deviceId, f.alarm.startedAt]), [[a.id, created + 660_000]], 'a: ten minutes after its latest sighting');
    await r.settleTimers(second);
    assert.equal(await r.recordSightings([{ ruleId: rule.id, deviceId: a.id, receivedAt: created + 60_000 }]), [], 'a replayed sighting does not end the silence');
    const ended = await r.recordSightings([{ ruleId: rule.id, deviceId: a.id, receivedAt: created + 700_000 }, { ruleId: listed.id, deviceId: b.id, receivedAt: created + 700_000 }]);
    assert.equal(ended.map((x) => [x.deviceId, x.status, x.clearedAt]), [[a.id, 'cleared', created + 700_000]]);
    clock.advance(3_000_000);
    const third = of(await r.fireDueTimers(clock.now(), 100, 60_000), rule, listed);
    await r.settleTimers(third);
    assert.equal(third.map((f) => [f.ruleId, f.deviceId, f.alarm.startedAt]).sort(), [
      [listed.id, b.id, created + 700_000 + 1_200_000],
      [rule.id, a.id, created + 700_000 + 600_000],
      [rule.id, c.id, created + 600_000 + 600_000],
    ].sort(), 'a from its new sighting, c from its creation, b by the rule that lists it (the other is still active)');
    assert.equal(await activeOf(h, rule.id), [a.id, b.id, c.id].sort());
  });

  test('silence: sightings of a deleted rule or of a rule of no silence are ignored; a deleted device\'s timer is dropped; a changed rule watches again from its change; malformed ones refused', async ({ r, h, clock }) => {
    const { ground } = await ownedGround(r);
    const a = (await r.createDevice({ groundId: ground.id, name: 'a', assets: TEMP })).device;
    const b = (await r.createDevice({ groundId: ground.id, name: 'b', assets: TEMP })).device;
    const rule = await r.createRule({ groundId: ground.id, name: 'quiet', asset: 'temp', condition: { silentFor: 'PT1M' }, severity: 'warning' });
    const hot = await r.createRule({ groundId: ground.id, name: 'hot', asset: 'temp', condition: { above: 1 }, severity: 'warning' });
    const gone = await r.createRule({ groundId: ground.id, name: 'gone', asset: 'temp', condition: { silentFor: 'PT1M' }, severity: 'warning' });
    await r.deleteRule(gone.id);
    assert.equal(await r.recordSightings([{ ruleId: gone.id, deviceId: a.id, receivedAt: clock.now() }, { ruleId: hot.id, deviceId: a.id, receivedAt: clock.now() }]), []);
    assert.is(Number((await h.sql('SELECT count(*) AS n FROM rule_standings WHERE rule_id = ANY($1)', [[gone.id, hot.id]]))[0].n), 0);
    await r.deleteDevice(b.id);
    clock.advance(30_000);
    await r.updateRule(rule.id, { condition: { silentFor: 'PT2M' } });
    clock.advance(90_000);
    assert.equal(of(await r.fireDueTimers(clock.now(), 100, 60_000), rule), [], 'watched from its change, two minutes');
    clock.advance(30_000);
    const fired = of(await r.fireDueTimers(clock.now(), 100, 60_000), rule);
    assert.equal(fired.map((f) => f.deviceId), [a.id], 'the deleted device: dropped');
    assert.is(Number((await h.sql('SELECT count(*) AS n FROM rule_standings WHERE device_id = $1', [b.id]))[0].n), 0);
    await rejects(r.recordSightings([{ ruleId: rule.id, deviceId: a.id, receivedAt: -1 }]), 'VALIDATION_FAILED');
    await rejects(r.recordSightings([{ ruleId: "' OR 1=1 --", deviceId: a.id, receivedAt: 1 }]), 'VALIDATION_FAILED');
    await rejects(r.recordSightings([{ ruleId: rule.id, deviceId: a.id, receivedAt: 1, extra: 1 } as never]), 'VALIDATION_FAILED');
    await rejects(r.fireDueTimers(clock.now(), 0, 1000), 'VALIDATION_FAILED', 'limit');
    await rejects(r.fireDueTimers(clock.now(), 10, -1), 'VALIDATION_FAILED', 'leaseMs');
  });

  test('timers fired by several callers at once: each once', async ({ r, h, clock }) => {
    const { ground } = await ownedGround(r);
    for (let i = 0; i < 30; i++) await r.createDevice({ groundId: ground.id, name: `d${i}`, assets: TEMP });
    const rule = await r.createRule({ groundId: ground.id, name: 'quiet', asset: 'temp', condition: { silentFor: 'PT1S' }, severity: 'warning' });
    clock.advance(1000);
    const all = await Promise.all(Array.from({ length: 4 }, () => r.fireDueTimers(clock.now(), 10, 60_000)));
    const more = await r.fireDueTimers(clock.now(), 1000, 60_000);
    const ids = of([...all.flat(), ...more], rule).map((f) => f.deviceId);
    assert.is(ids.length, 30);
    assert.is(new Set(ids).size, 30, 'no standing fired twice');
    assert.is((await activeOf(h, rule.id)).length, 30);
  });

  test('progress: no timer fires past the least partition\'s progress; it only moves forward; partitions beyond the count are dropped', async ({ r, h, clock }) => {
    const { ground } = await ownedGround(r);
    const a = (await r.createDevice({ groundId: ground.id, name: 'a', assets: TEMP })).device;
    const rule = await r.createRule({ groundId: ground.id, name: 'quiet', asset: 'temp', condition: { silentFor: 'PT1M' }, severity: 'warning' });
    const due = clock.now() + 60_000;
    clock.advance(120_000);
    await r.recordProgress([{ partition: 0, through: due + 10 }, { partition: 1, through: due - 1 }, { partition: 7, through: 0 }], 8);
    assert.equal(of(await r.fireDueTimers(clock.now(), 100, 60_000), rule), [], 'partition 1 has not judged through the deadline');
    await r.recordProgress([{ partition: 1, through: due - 5 }], 8);
    assert.equal(of(await r.fireDueTimers(clock.now(), 100, 60_000), rule), [], 'progress does not go back');
    await r.recordProgress([{ partition: 1, through: due }], 2);
    const fired = of(await r.fireDueTimers(clock.now(), 100, 60_000), rule);
    assert.equal(fired.map((f) => f.deviceId), [a.id], 'partition 7 is beyond the count: dropped; the others are through');
    assert.equal((await h.sql('SELECT partition FROM rule_progress ORDER BY partition')).map((row) => Number(row.partition)), [0, 1]);
    await rejects(r.recordProgress([{ partition: -1, through: 1 }], 2), 'VALIDATION_FAILED');
    await rejects(r.recordProgress([], 0), 'VALIDATION_FAILED', 'partitions');
    await h.sql('DELETE FROM rule_progress');
  });

  return test;
}
