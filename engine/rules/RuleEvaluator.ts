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
 * - Judged so far: `above`, `below`, `outside`, `equals`, `outsideArea`, with `clear`. Rules with
 *   `for` or `silentFor` need timers and are not judged yet.
 */
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import type { AlarmRegistry, EvaluationOutcome, EvaluationStanding, RuleEvaluation } from '../ports/alarmRegistry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import type { Rule, RuleRegistry } from '../ports/ruleRegistry.ts';
import type { StateRow } from '../../schemas/messages.ts';
import { valueTest, type ValueTest } from './conditions.ts';
import { alarmEvent, stateId } from '../events/eventRecords.ts';
import type { AlarmEvent } from '../../schemas/events.ts';

const retryBackoff = exponentialBackoff({ initialMs: 100, maxMs: 5000 });
const RULES_PAGE = 1000;

interface JudgedRule {
  rule: Rule;
  /** The integrations its actions deliver its alarms to. */
  integrations: readonly string[];
  holds: ValueTest;
  /** Without a clear condition: the condition no longer holds. */
  clears: ValueTest;
}

export interface RuleEvaluatorOptions {
  rules: Pick<RuleRegistry, 'listRules'>;
  alarms: Pick<AlarmRegistry, 'applyEvaluation' | 'evaluationStanding'>;
  /** The ground a device is in (undefined: deleted); a promise when it must be looked up. */
  groundOf(deviceId: string): string | undefined | Promise<string | undefined>;
  clock: Clock;
  /** An alarm raised, repeated or cleared. */
  onAlarm?(outcome: EvaluationOutcome, evaluation: RuleEvaluation): void;
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
  /** `${ruleId} ${deviceId}` → its standing (what the registry has, or newer in memory). */
  readonly #standings = new Map<string, EvaluationStanding>();
  /** Per device, the end of its queue of judgements. */
  readonly #queues = new Map<string, Promise<unknown>>();
  #stopped = false;

  constructor(options: RuleEvaluatorOptions) {
    this.#o = options;
  }

  /** A registry change (a consumer of the process's RegistryChangeFanOut). */
  changed(change: RegistryChange): void {
    if (change.kind === 'rule-changed' || change.kind === 'rule-deleted') this.#rules.delete(change.groundId);
    else if (change.kind === 'resync') this.#rules.clear();
    if (change.kind === 'rule-deleted' || change.kind === 'resync') {
      for (const key of this.#standings.keys()) if (change.kind === 'resync' || key.startsWith(`${change.ruleId} `)) this.#standings.delete(key);
    }
  }

  stop(): void {
    this.#stopped = true;
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
        if (!rows.some((row) => rules.of(deviceId, row.asset) !== undefined)) return undefined;
        // Nothing of this device waits to be judged, and these rows change nothing: judged now.
        if (!this.#queues.has(deviceId) && this.#changeNothing(rules, deviceId, rows)) return undefined;
      }
    }
    let release!: () => void;
    const stored = new Promise<void>((resolve) => { release = resolve; });
    const previous: Promise<unknown> = this.#queues.get(deviceId) ?? Promise.resolve();
    const done = previous.then(() => stored).then(() => this.#judge(deviceId, rows));
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
   * Whether every rule judging these rows, from the standings in memory, would leave things as they
   * are (the condition did not hold and does not; nothing active to clear, or a late state); then
   * records them as judged. False, and nothing recorded, when a standing is not in memory or one
   * row would need the registry: the rows are then judged once durable, in the device's queue.
   * The common case — nothing wrong — costs no promise and no registry call.
   */
  #changeNothing(rules: GroundRules, deviceId: string, rows: readonly StateRow[]): boolean {
    const next = new Map<string, EvaluationStanding>();
    for (const row of rows) {
      for (const judged of rules.of(deviceId, row.asset) ?? []) {
        const key = `${judged.rule.id} ${deviceId}`;
        const standing = next.get(key) ?? this.#standings.get(key);
        if (standing === undefined) return false;
        const id = stateId(row);
        if (row.ts < standing.at || (row.ts === standing.at && id <= standing.stateId)) continue;
        if (judged.holds(row.value) || standing.holding || (standing.active && judged.clears(row.value))) return false;
        next.set(key, { ...standing, at: row.ts, stateId: id });
      }
    }
    for (const [key, standing] of next) this.#standings.set(key, standing);
    return true;
  }

  async #judge(deviceId: string, rows: readonly StateRow[]): Promise<AlarmEvent[]> {
    const events: AlarmEvent[] = [];
    const groundId = await this.#o.groundOf(deviceId);
    if (groundId === undefined) return events;
    const rules = await this.#rulesOf(groundId);
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
    const key = `${rule.id} ${row.deviceId}`;
    let standing = this.#standings.get(key);
    if (standing === undefined) {
      standing = (await this.#retrying(() => this.#o.alarms.evaluationStanding(rule.id, row.deviceId))) ?? { holding: false, at: -1, stateId: '', active: false };
      this.#standings.set(key, standing);
    }
    const id = stateId(row);
    if (row.ts < standing.at || (row.ts === standing.at && id <= standing.stateId)) return undefined; // late, or judged already
    const holds = judged.holds(row.value);
    const clears = judged.clears(row.value);
    const next: EvaluationStanding = { ...standing, holding: holds, at: row.ts, stateId: id };
    // Nothing to tell the registry: the condition did not hold and does not, or nothing is active to clear.
    if (!holds && !standing.holding && !(clears && standing.active)) {
      this.#standings.set(key, next);
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
      this.#standings.delete(key);
      return undefined;
    }
    // Nothing cleared although the clear condition held: nothing was active (a member cleared it).
    next.active = outcome.alarm !== undefined ? outcome.alarm.status === 'active' : outcome.change === 'none' && clears ? false : standing.active;
    this.#standings.set(key, next);
    const { change, alarm } = outcome;
    if (alarm === undefined || !(change === 'raised' || change === 'repeated' || change === 'cleared')) return undefined;
    this.#o.onAlarm?.(outcome, evaluation);
    if (change === 'raised' && this.#o.command !== undefined) {
      for (const [i, action] of rule.actions.entries()) {
        if (!('command' in action)) continue;
        const command = { id: `${alarm.id}-${i}`, deviceId: row.deviceId, asset: action.command.asset, value: action.command.value, issuer: `rule:${rule.id}` };
        await this.#retrying(() => this.#o.command!(command));
      }
    }
    return alarmEvent(alarm, change, judged.integrations, row.ts);
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
      return new GroundRules(all.filter(judgedNow).map(judge));
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

function judgedNow(rule: Rule): boolean {
  return rule.for === undefined && !('silentFor' in rule.condition);
}

function judge(rule: Rule): JudgedRule {
  const holds = valueTest(rule.condition);
  const clear = rule.clear === undefined ? undefined : valueTest(rule.clear);
  const integrations = rule.actions.flatMap((action) => ('integration' in action ? [action.integration] : []));
  return { rule, integrations, holds, clears: clear ?? ((value) => !holds(value)) };
}

/**
 * A ground's rules found by asset, and by device for those that list devices: what concerns a
 * state is found in the time of two map lookups, however many rules the ground has.
 */
class GroundRules {
  readonly #everyDevice = new Map<string, JudgedRule[]>();
  readonly #byDevice = new Map<string, Map<string, JudgedRule[]>>();

  constructor(rules: readonly JudgedRule[]) {
    const add = (map: Map<string, JudgedRule[]>, key: string, judged: JudgedRule) => {
      const list = map.get(key);
      if (list === undefined) map.set(key, [judged]);
      else list.push(judged);
    };
    for (const judged of rules) {
      const { asset, devices } = judged.rule;
      if (devices === undefined) add(this.#everyDevice, asset, judged);
      else {
        for (const deviceId of devices) {
          let assets = this.#byDevice.get(deviceId);
          if (assets === undefined) this.#byDevice.set(deviceId, (assets = new Map()));
          add(assets, asset, judged);
        }
      }
    }
  }

  /** The rules judging a state of `asset` of `deviceId`, oldest first; undefined for none. */
  of(deviceId: string, asset: string): readonly JudgedRule[] | undefined {
    const every = this.#everyDevice.get(asset);
    const listed = this.#byDevice.get(deviceId)?.get(asset);
    if (listed === undefined) return every;
    if (every === undefined) return listed;
    return [...every, ...listed].sort((a, b) => a.rule.createdAt - b.rule.createdAt || (a.rule.id < b.rule.id ? -1 : 1));
  }
}
