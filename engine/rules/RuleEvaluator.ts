/**
 * Judges the states the engine stores by the rules of their device's ground (docs/rules.md), and
 * has the alarms registry apply each verdict (AlarmRegistry.applyEvaluation).
 *
 * - In the device's order: the pipeline asks for a judgement when it hands an uplink's rows to the
 *   store (`judgement`), and runs it once they are durable; judgements of one device run one after
 *   another in the order they were asked for, whatever order the store finishes in. The uplink is
 *   finished (its offset committable) only after its judgement is applied: a crash replays it, and
 *   the registry recognises a state it has applied already (stale), so an alarm is raised once.
 * - Cheap when nothing is wrong: what a rule last made of a device (its standing) is kept in
 *   memory, loaded from the registry the first time; rows that change nothing (the condition did
 *   not hold and does not), of a device with nothing waiting, are judged at once when they go to
 *   the store (`judgement` answers undefined): no promise, no registry call.
 * - A late state (measured before the last state judged for that rule and device) is stored but
 *   judged by no rule: alarms follow the newest state.
 * - Rules of a ground are read once and dropped when a rule of the ground changes (registry
 *   changes `rule-changed`, `rule-deleted`, `resync`).
 * - A raised alarm runs its rule's command actions (appended to topic `commands` before the uplink
 *   is finished) and goes, as an alarm event, into the uplink's record of topic `events`.
 * - Timers (`for`, `silentFor`) live in the registry, with the standings, so they survive a restart
 *   and cost no memory per device: a state of a silence rule's asset is a sighting, recorded in
 *   batches (at most one registry call per `sightingsFlushMs`), that moves its timer and ends the
 *   silence alarm; the evaluator asks the registry every `intervalMs` for the timers due and runs
 *   what they raise (AlarmRegistry.fireDueTimers), settling each once its actions are durable.
 */
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import type { AlarmRegistry, EvaluationStanding, RuleEvaluation, SilenceSighting, TimerFiring } from '../ports/alarmRegistry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import type { Rule, RuleRegistry } from '../ports/ruleRegistry.ts';
import type { StateRow } from '../../schemas/messages.ts';
import { GroundRules, judge, NONE, type JudgedRule } from './GroundRules.ts';
import type { UplinkProgress } from './UplinkProgress.ts';
import { alarmEvent, stateId } from '../events/eventRecords.ts';
import type { AlarmEvent } from '../../schemas/events.ts';
import type { Alarm } from '../ports/alarmRegistry.ts';
import type { EventWriter } from '../events/EventWriter.ts';
import { alarmEventsRecord } from '../events/eventRecords.ts';

const retryBackoff = exponentialBackoff({ initialMs: 100, maxMs: 5000 });
const RULES_PAGE = 1000;
/** Timers fired per registry transaction. */
const FIRINGS_PER_CALL = 500;
/** What #changeNothing found: no rule judges the rows; none changes anything (recorded); the rows must be judged in the queue. */
const NO_RULE = 0;
const NOTHING = 1;
const JUDGE = 2;

/** When timers are looked for and how long a firing is held for its actions (docs/rules.md "Timers"). */
export interface RuleTimerSettings {
  /** How often the registry is asked for the timers due. Default 1000 ms. */
  intervalMs?: number;
  /**
   * How long after its deadline a timer fires, so that a state received just before it, still on
   * its way to the store, ends a silence first. Default 2000 ms.
   */
  graceMs?: number;
  /** How often the sightings of silence rules' assets are recorded. Default 1000 ms. */
  sightingsFlushMs?: number;
  /** How long a fired timer is held for its actions before it fires again. Default 60 000 ms. */
  leaseMs?: number;
}


export interface RuleEvaluatorOptions {
  rules: Pick<RuleRegistry, 'listRules'>;
  alarms: Pick<AlarmRegistry, 'applyEvaluation' | 'evaluationStanding' | 'recordSightings' | 'fireDueTimers' | 'settleTimers' | 'recordProgress'>;
  /**
   * How far this process's engine has judged topic `uplinks` (UplinkProgress), recorded before
   * timers are fired: no timer fires while a partition may hold a state received before it.
   * Without it (tests of one evaluator), timers fire by the clock alone.
   */
  progress?: Pick<UplinkProgress, 'through'>;
  /** The ground a device is in (undefined: deleted); a promise when it must be looked up. */
  groundOf(deviceId: string): string | undefined | Promise<string | undefined>;
  clock: Clock;
  /** An alarm raised, repeated or cleared (by a state or a timer). */
  onAlarm?(change: 'raised' | 'repeated' | 'cleared', alarm: Alarm): void;
  /**
   * Topic `events`, for the alarm changes timers and sightings make (those states make go into
   * their uplink's record, judgement's answer). Without it they go to no integration.
   */
  events?: Pick<EventWriter, 'add' | 'wanted' | 'now'>;
  timers?: RuleTimerSettings;
  /**
   * A command action of a rule whose alarm was raised: appended to topic `commands` like an
   * application's command (the device's command owner checks it against the device); resolves once
   * durable. Its id is the alarm's and the action's: appended twice, it is one command.
   */
  command?(command: { id: string; deviceId: string; asset: string; value: unknown; issuer: string }): Promise<void>;
  logger: Logger;
}

export class RuleEvaluator {
  readonly #o: RuleEvaluatorOptions;
  /** Per ground, its rules as judged, by asset and device (loading, or loaded). */
  readonly #rules = new Map<string, Promise<GroundRules> | GroundRules>();
  /** Per device, per rule id, its standing (what the registry has, or newer in memory). */
  readonly #standings = new Map<string, Map<string, EvaluationStanding>>();
  /** Per device, the end of its queue of judgements. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Sightings of silence rules' assets not yet recorded, the latest per (rule, device). */
  #sightings = new Map<string, SilenceSighting>();
  /** The recording of sightings under way. */
  #recording: Promise<void> | undefined;
  /** The next recording of sightings, scheduled. */
  #flushTimer: { cancel(): void } | undefined;
  #timerTick: { cancel(): void } | undefined;
  #firing: Promise<void> | undefined;
  readonly #t: Required<RuleTimerSettings>;
  #stopped = false;

  constructor(options: RuleEvaluatorOptions) {
    this.#o = options;
    const t = options.timers ?? {};
    this.#t = { intervalMs: t.intervalMs ?? 1000, graceMs: t.graceMs ?? 2000, sightingsFlushMs: t.sightingsFlushMs ?? 1000, leaseMs: t.leaseMs ?? 60_000 };
  }

  /** Starts firing the timers due (on an interval, until stop). */
  start(): void {
    if (this.#timerTick !== undefined || this.#stopped) return;
    const tick = () => {
      this.#firing = this.fireDue().finally(() => {
        this.#firing = undefined;
        if (!this.#stopped) this.#timerTick = this.#o.clock.setTimeout(tick, this.#t.intervalMs);
      });
    };
    this.#timerTick = this.#o.clock.setTimeout(tick, this.#t.intervalMs);
  }

  /** A registry change (a consumer of the process's RegistryChangeFanOut). */
  changed(change: RegistryChange): void {
    if (change.kind === 'rule-changed' || change.kind === 'rule-deleted') this.#rules.delete(change.groundId);
    else if (change.kind === 'resync') this.#rules.clear();
    // A changed rule starts again from the next state (the registry dropped its standings).
    if (change.kind === 'rule-changed' || change.kind === 'rule-deleted' || change.kind === 'resync') {
      if (change.kind === 'resync') this.#standings.clear();
      else for (const byRule of this.#standings.values()) byRule.delete(change.ruleId);
    }
  }

  /** Stops firing timers, and records the sightings held. */
  async stop(): Promise<void> {
    this.#timerTick?.cancel();
    await this.#firing;
    await this.recordSightings();
    this.#stopped = true;
  }

  /**
   * Records the sightings held and this engine's progress, then fires the timers due now (less
   * the grace) and through every engine's progress, as many calls as it takes: runs what each alarm
   * raised does (command actions, an alarm event, onAlarm), then settles them. Called on an
   * interval once started; a test calls it after moving its clock.
   */
  async fireDue(): Promise<void> {
    const progress = this.#o.progress === undefined ? undefined : await this.#retrying(() => this.#o.progress!.through());
    // The sightings of every uplink the progress covers, recorded before it is.
    await this.recordSightings();
    if (progress !== undefined) await this.#retrying(() => this.#o.alarms.recordProgress(progress.progress, progress.partitions));
    for (;;) {
      const firings = await this.#retrying(() => this.#o.alarms.fireDueTimers(this.#o.clock.now() - this.#t.graceMs, FIRINGS_PER_CALL, this.#t.leaseMs));
      if (firings === undefined || firings.length === 0) return;
      await Promise.all(firings.map((firing) => this.#raisedByTimer(firing)));
      await this.#retrying(() => this.#o.alarms.settleTimers(firings));
      if (firings.length < FIRINGS_PER_CALL) return;
    }
  }

  async #raisedByTimer({ alarm }: TimerFiring): Promise<void> {
    const judged = (await this.#rulesOf(alarm.groundId)).byId(alarm.ruleId);
    this.#o.onAlarm?.('raised', alarm);
    if (judged !== undefined) await this.#runActions(judged.rule, alarm);
    await this.#addEvents([alarmEvent(alarm, 'raised', judged?.integrations ?? [], alarm.startedAt)]);
  }

  /** Records the sightings held (a registry call per batch), and what the alarms they end do. */
  recordSightings(): Promise<void> {
    this.#flushTimer?.cancel();
    this.#flushTimer = undefined;
    if (this.#recording === undefined) {
      const recording = this.#recordAll();
      this.#recording = recording;
      void recording.finally(() => {
        if (this.#recording === recording) this.#recording = undefined;
      });
    }
    return this.#recording;
  }

  async #recordAll(): Promise<void> {
    while (this.#sightings.size > 0) {
      const sightings = [...this.#sightings.values()];
      this.#sightings = new Map();
      const cleared = await this.#retrying(() => this.#o.alarms.recordSightings(sightings)) ?? [];
      const events: AlarmEvent[] = [];
      for (const alarm of cleared) {
        this.#o.onAlarm?.('cleared', alarm);
        const rules = this.#rules.get(alarm.groundId);
        const integrations = rules instanceof GroundRules ? rules.byId(alarm.ruleId)?.integrations ?? [] : [];
        events.push(alarmEvent(alarm, 'cleared', integrations, alarm.clearedAt ?? alarm.updatedAt));
      }
      await this.#addEvents(events);
    }
  }

  /** A state of the asset of silence rules: recorded with the next batch of sightings. */
  #sighted(rules: readonly JudgedRule[], deviceId: string, receivedAt: number): void {
    for (const { rule } of rules) {
      const key = `${rule.id} ${deviceId}`;
      const known = this.#sightings.get(key);
      if (known === undefined || known.receivedAt < receivedAt) this.#sightings.set(key, { ruleId: rule.id, deviceId, receivedAt });
    }
    if (this.#flushTimer === undefined && !this.#stopped) {
      this.#flushTimer = this.#o.clock.setTimeout(() => {
        this.#flushTimer = undefined;
        // One batch at a time: sightings made while one is recorded wait for the next.
        void (this.#recording ?? Promise.resolve()).then(() => this.recordSightings());
      }, this.#t.sightingsFlushMs);
    }
  }

  async #addEvents(events: readonly AlarmEvent[]): Promise<void> {
    const writer = this.#o.events;
    if (events.length === 0 || writer === undefined || !writer.wanted) return;
    const byDevice = new Map<string, AlarmEvent[]>();
    for (const event of events) {
      const list = byDevice.get(event.deviceId);
      if (list === undefined) byDevice.set(event.deviceId, [event]);
      else list.push(event);
    }
    await Promise.all([...byDevice.values()].map((list) => this.#retrying(() => writer.add(alarmEventsRecord(list, writer.now())))));
  }

  /**
   * Takes the place of an uplink's rows in their device's order. Undefined when it is known now
   * that no rule concerns them; else the function to call once they are durable, which resolves
   * when every verdict is applied, with the alarm changes they made (for topic `events`).
   */
  judgement(rows: readonly StateRow[]): (() => Promise<AlarmEvent[]>) | undefined {
    if (rows.length === 0) return undefined;
    const deviceId = rows[0].deviceId;
    const ground = this.#o.groundOf(deviceId);
    if (ground === undefined) return undefined;
    if (typeof ground === 'string') {
      const rules = this.#rules.get(ground);
      if (rules instanceof GroundRules) {
        if (rules.watchesSilence) this.#sight(rules, deviceId, rows);
        const verdict = this.#changeNothing(rules, deviceId, rows);
        if (verdict === NO_RULE || verdict === NOTHING) return undefined;
      }
    }
    let release!: () => void;
    const stored = new Promise<void>((resolve) => { release = resolve; });
    const previous: Promise<unknown> = this.#queues.get(deviceId) ?? Promise.resolve();
    const done = previous.then(() => stored).then(() => this.#judge(deviceId, rows, typeof ground === 'string' && this.#rules.get(ground) instanceof GroundRules));
    this.#queues.set(deviceId, done);
    void done.then(() => {
      if (this.#queues.get(deviceId) === done) this.#queues.delete(deviceId);
    }, () => undefined);
    return () => {
      release();
      return done;
    };
  }

  /**
   * Whether any rule judges these rows (NO_RULE: none) and, when one does and nothing of this device
   * waits to be judged, whether every rule judging them, from the standings in memory, would leave
   * things as they are (the condition did not hold and does not; nothing active to clear, or a late
   * state): then they are recorded as judged (NOTHING). JUDGE, and nothing recorded, when a standing
   * is not in memory or one row would need the registry: the rows are then judged once durable, in
   * the device's queue. The common case — nothing wrong — costs no promise, no registry call and
   * (one judged row) no allocation but its state's id.
   */
  #changeNothing(rules: GroundRules, deviceId: string, rows: readonly StateRow[]): typeof NO_RULE | typeof NOTHING | typeof JUDGE {
    // The rows some rule judges: most uplinks have one (kept apart: no array for it).
    let only: StateRow | undefined;
    let onlyJudging: readonly JudgedRule[] | undefined;
    let more: [StateRow, readonly JudgedRule[]][] | undefined;
    const listed = rules.listedFor(deviceId);
    if (listed === NONE) return NO_RULE;
    const byRule = this.#standings.get(deviceId);
    // First whether nothing changes, against the standings as they are: a later row of the same
    // rule is taken as not late here, which can only send the rows to the queue.
    for (const row of rows) {
      const judging = rules.ofListed(listed, row.asset);
      if (judging === undefined) continue;
      if (byRule === undefined || this.#queues.has(deviceId)) return JUDGE;
      for (const judged of judging) {
        const standing = byRule.get(judged.rule.id);
        if (standing === undefined) return JUDGE;
        if (row.ts < standing.at) continue;
        if (judged.holds(row.value) || standing.holding || (standing.active && judged.clears(row.value))) return JUDGE;
      }
      if (only === undefined) {
        only = row;
        onlyJudging = judging;
      } else (more ??= []).push([row, judging]);
    }
    if (only === undefined) return NO_RULE;
    // Then recorded, in the rows' order.
    this.#judged(byRule!, only, onlyJudging!);
    if (more !== undefined) for (const [row, judging] of more) this.#judged(byRule!, row, judging);
    return NOTHING;
  }

  /**
   * `row` judged by `judging` and nothing changed: their standings move to its time, when it is
   * later. Its id is not kept (building it was a good part of this path's cost): a state of the
   * same time comes next is judged again, which changes nothing or goes to the registry, which
   * knows the last state it applied.
   */
  #judged(byRule: Map<string, EvaluationStanding>, row: StateRow, judging: readonly JudgedRule[]): void {
    for (const judged of judging) {
      const standing = byRule.get(judged.rule.id)!;
      if (row.ts <= standing.at) continue;
      standing.at = row.ts;
      standing.stateId = '';
    }
  }

  #standingOf(ruleId: string, deviceId: string): EvaluationStanding | undefined {
    return this.#standings.get(deviceId)?.get(ruleId);
  }

  #setStanding(ruleId: string, deviceId: string, standing: EvaluationStanding | undefined): void {
    let byRule = this.#standings.get(deviceId);
    if (standing === undefined) {
      byRule?.delete(ruleId);
      return;
    }
    if (byRule === undefined) this.#standings.set(deviceId, (byRule = new Map()));
    byRule.set(ruleId, standing);
  }

  #sight(rules: GroundRules, deviceId: string, rows: readonly StateRow[]): void {
    for (const row of rows) {
      const silence = rules.silenceOf(deviceId, row.asset);
      if (silence !== undefined) this.#sighted(silence, deviceId, row.receivedAt);
    }
  }

  /** `sighted`: the rows' sightings were taken when they were handed over (their ground's rules were known then). */
  async #judge(deviceId: string, rows: readonly StateRow[], sighted: boolean): Promise<AlarmEvent[]> {
    const events: AlarmEvent[] = [];
    const groundId = await this.#o.groundOf(deviceId);
    if (groundId === undefined) return events;
    const rules = await this.#rulesOf(groundId);
    if (!sighted && rules.watchesSilence) this.#sight(rules, deviceId, rows);
    for (const row of rows) {
      for (const judged of rules.of(deviceId, row.asset) ?? []) {
        const event = await this.#judgeOne(judged, groundId, row);
        if (event !== undefined) events.push(event);
      }
    }
    return events;
  }

  async #judgeOne(judged: JudgedRule, groundId: string, row: StateRow): Promise<AlarmEvent | undefined> {
    const { rule } = judged;
    let standing = this.#standingOf(rule.id, row.deviceId);
    if (standing === undefined) {
      standing = (await this.#retrying(() => this.#o.alarms.evaluationStanding(rule.id, row.deviceId))) ?? { holding: false, at: -1, stateId: '', active: false };
      this.#setStanding(rule.id, row.deviceId, standing);
    }
    const id = stateId(row);
    if (row.ts < standing.at || (row.ts === standing.at && id <= standing.stateId)) return undefined; // late, or judged already
    const holds = judged.holds(row.value);
    const clears = judged.clears(row.value);
    const next: EvaluationStanding = { ...standing, holding: holds, at: row.ts, stateId: id };
    // Nothing to tell the registry: the condition did not hold and does not, or nothing is active to clear.
    if (!holds && !standing.holding && !(clears && standing.active)) {
      this.#setStanding(rule.id, row.deviceId, next);
      return undefined;
    }
    const evaluation: RuleEvaluation = {
      ruleId: rule.id, groundId, deviceId: row.deviceId, asset: row.asset, severity: rule.severity,
      at: row.ts, stateId: id, value: row.value, holds, clears,
    };
    const outcome = await this.#retrying(() => this.#o.alarms.applyEvaluation(evaluation));
    if (outcome === undefined) return undefined;
    if (outcome.change === 'stale') {
      // Another engine (or this one before a restart) judged it: ask again next time.
      this.#setStanding(rule.id, row.deviceId, undefined);
      return undefined;
    }
    // Nothing cleared although the clear condition held: nothing was active (a member cleared it).
    next.active = outcome.alarm !== undefined ? outcome.alarm.status === 'active' : outcome.change === 'none' && clears ? false : standing.active;
    // Its timer may raise the alarm (in this engine or another): until a state finds out, held active,
    // so that a state for which the clear condition holds is taken to the registry.
    if (outcome.change === 'pending') next.active = true;
    this.#setStanding(rule.id, row.deviceId, next);
    const { change, alarm } = outcome;
    if (alarm === undefined || !(change === 'raised' || change === 'repeated' || change === 'cleared')) return undefined;
    this.#o.onAlarm?.(change, alarm);
    if (change === 'raised') await this.#runActions(rule, alarm);
    return alarmEvent(alarm, change, judged.integrations, row.ts);
  }

  /** A raised alarm's command actions, appended to topic `commands` (ids of the alarm's: appended twice, one command). */
  async #runActions(rule: Rule, alarm: Alarm): Promise<void> {
    if (this.#o.command === undefined) return;
    for (const [i, action] of rule.actions.entries()) {
      if (!('command' in action)) continue;
      const command = { id: `${alarm.id}-${i}`, deviceId: alarm.deviceId, asset: action.command.asset, value: action.command.value, issuer: `rule:${rule.id}` };
      await this.#retrying(() => this.#o.command!(command));
    }
  }

  async #rulesOf(groundId: string): Promise<GroundRules> {
    const known = this.#rules.get(groundId);
    if (known !== undefined) return known;
    const loading = this.#retrying(async () => {
      const all: Rule[] = [];
      for (let after: { createdAt: number; id: string } | undefined; ;) {
        const page = await this.#o.rules.listRules(groundId, after === undefined ? { limit: RULES_PAGE } : { limit: RULES_PAGE, after });
        all.push(...page);
        if (page.length < RULES_PAGE) break;
        after = { createdAt: page[page.length - 1].createdAt, id: page[page.length - 1].id };
      }
      return new GroundRules(all.map(judge));
    }).then((rules) => {
      const known = rules ?? new GroundRules([]);
      if (this.#rules.get(groundId) === loading) this.#rules.set(groundId, known);
      return known;
    });
    this.#rules.set(groundId, loading);
    return loading;
  }

  /** `call` until it succeeds or fails for good (then undefined, logged): a registry away is waited out. */
  async #retrying<T>(call: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const failure = toFleetError(error);
        if (!failure.retriable || this.#stopped) {
          this.#o.logger.warn('a rule could not be judged', { error: failure.message });
          return undefined;
        }
        await new Promise<void>((resolve) => this.#o.clock.setTimeout(resolve, retryBackoff(attempt)));
      }
    }
  }
}
