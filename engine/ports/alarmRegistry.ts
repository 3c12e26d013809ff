/**
 * Alarms port, a part of the registry (engine/ports/registry.ts): what rules raised, and where each
 * rule stands for each device. SQL in adapters/sql-registry/alarms.ts; contract in
 * test/contracts/alarms.contract.ts.
 *
 * The engine judges each state of a device by each rule that covers it (engine/rules/) and hands
 * the verdict to applyEvaluation, which changes the alarm and the rule's standing for the device in
 * one transaction. The timers of rules (`for`, `silentFor`) are kept in the standings too and fired
 * by fireDueTimers. An evaluation at or before the last one applied for that (rule, device) — a
 * replay after a crash, the same state judged by two engines while a partition moves, a late
 * state — changes nothing: an alarm is raised, repeated and cleared once per state.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing alarm, or for an evaluation of a rule deleted meanwhile (field `ruleId`), UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED
 * after close(). Lookups answer undefined for a malformed id without querying.
 */
import type { Alarm, AlarmQuery, RuleEvaluation, RuleProgress, SilenceSighting } from '../../schemas/alarms.ts';

export type { Alarm, AlarmQuery, AlarmStatus, RuleEvaluation, RuleProgress, SilenceSighting } from '../../schemas/alarms.ts';

/**
 * What an evaluation did: `raised` a new alarm; `repeated` the active one (the condition holds
 * again: count + 1); `updated` its last value (the condition still holds); `cleared` it; `pending`
 * (the condition holds, not yet for the rule's `for`: the standing's timer is set); `none`
 * (nothing active, nothing holds, or the condition stopped holding short of clearing); `stale`.
 */
export type EvaluationChange = 'raised' | 'repeated' | 'updated' | 'cleared' | 'pending' | 'none' | 'stale';

export interface EvaluationOutcome {
  change: EvaluationChange;
  /** The alarm as it is after the change (raised, repeated, updated, cleared). */
  alarm?: Alarm;
}

/** Where a rule stands for a device: the last evaluation applied. */
export interface EvaluationStanding {
  holding: boolean;
  at: number;
  stateId: string;
  /** An alarm of this (rule, device) is active. */
  active: boolean;
}

/** A member's change of an alarm: the alarm as it is now, and whether this call changed it. */
export interface MemberChange {
  alarm: Alarm;
  changed: boolean;
}

/** A timer fired (fireDueTimers): the alarm it raised, held until `lease` for its actions. */
export interface TimerFiring {
  ruleId: string;
  deviceId: string;
  lease: number;
  alarm: Alarm;
}

export interface AlarmRegistry {
  /**
   * In one transaction, unless stale: when `holds`, raises an alarm (none active), repeats the
   * active one (the last evaluation did not hold) or updates its last value; otherwise, when
   * `clears`, clears the active one at `at`. Then records the evaluation as the standing.
   */
  applyEvaluation(evaluation: RuleEvaluation): Promise<EvaluationOutcome>;
  /** Undefined before any evaluation of that (rule, device). */
  evaluationStanding(ruleId: string, deviceId: string): Promise<EvaluationStanding | undefined>;
  /**
   * States of the assets of silence rules (`silentFor`), by their receive time: each moves its
   * standing's timer to that time plus the rule's duration (an older one than the last recorded
   * changes nothing), and ends the active alarm of its (rule, device) — the silence is over. In one
   * transaction; answers the alarms cleared. Sightings of rules deleted meanwhile are ignored.
   */
  recordSightings(sightings: readonly SilenceSighting[]): Promise<Alarm[]>;
  /**
   * Fires, in one transaction, up to `limit` standings whose timer is due at `now` and through the
   * engines' progress (recordProgress: no partition may hold an uplink received before it): raises the
   * alarm of a silence rule (no state since its timer was set) and of a `for` rule whose condition
   * has held since (no state that does not hold came). A due timer is fired by one caller, however
   * many engines ask at once (a standing another transaction holds is passed by), and is then held
   * for `leaseMs`: the caller runs the alarm's actions and settles it (settleTimers); unsettled by
   * then (the engine stopped), it fires again, with the same alarm. A standing of a device deleted
   * (or of another ground) is dropped.
   */
  fireDueTimers(now: number, limit: number, leaseMs: number): Promise<TimerFiring[]>;
  /**
   * Where the engines stand: per partition of topic `uplinks` they hold, the receive time through
   * which every uplink is judged (it only moves forward); `partitions`, the topic's count (rows of
   * partitions beyond it are dropped). fireDueTimers fires nothing due after the least of them.
   */
  recordProgress(progress: RuleProgress, partitions: number): Promise<void>;
  /** The firings' actions are done: their timers end (unless a state set them again meanwhile). */
  settleTimers(firings: readonly Pick<TimerFiring, 'ruleId' | 'deviceId' | 'lease'>[]): Promise<void>;
  getAlarm(alarmId: string): Promise<Alarm | undefined>;
  /** A ground's alarms, newest first (started time, then id), filtered; a page when `query` says so. */
  listAlarms(groundId: string, query?: AlarmQuery): Promise<Alarm[]>;
  /**
   * Acknowledged by `userId` at `at` (an alarm already acknowledged keeps its first; `changed` only
   * for the call that acknowledged it, however many come at once). NOT_FOUND when missing.
   */
  acknowledgeAlarm(alarmId: string, userId: string, at: number): Promise<MemberChange>;
  /** Cleared by a member at `at` (one already cleared is unchanged, `changed` false). NOT_FOUND when missing. */
  clearAlarm(alarmId: string, at: number): Promise<MemberChange>;
}
