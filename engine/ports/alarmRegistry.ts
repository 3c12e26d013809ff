/**
 * Alarms port, a part of the registry (engine/ports/registry.ts): what rules raised, and where each
 * rule stands for each device. SQL in adapters/sql-registry/alarms.ts; contract in
 * test/contracts/alarms.contract.ts.
 *
 * The engine judges each state of a device by each rule that covers it (engine/rules/) and hands
 * the verdict to applyEvaluation, which changes the alarm and the rule's standing for the device in
 * one transaction. An evaluation at or before the last one applied for that (rule, device) — a
 * replay after a crash, the same state judged by two engines while a partition moves, a late
 * state — changes nothing: an alarm is raised, repeated and cleared once per state.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing alarm, or for an evaluation of a rule deleted meanwhile (field `ruleId`), UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED
 * after close(). Lookups answer undefined for a malformed id without querying.
 */
import type { Alarm, AlarmQuery, RuleEvaluation } from '../../schemas/alarms.ts';

export type { Alarm, AlarmQuery, AlarmStatus, RuleEvaluation } from '../../schemas/alarms.ts';

/**
 * What an evaluation did: `raised` a new alarm; `repeated` the active one (the condition holds
 * again: count + 1); `updated` its last value (the condition still holds); `cleared` it; `none`
 * (nothing active, nothing holds, or the condition stopped holding short of clearing); `stale`.
 */
export type EvaluationChange = 'raised' | 'repeated' | 'updated' | 'cleared' | 'none' | 'stale';

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

export interface AlarmRegistry {
  /**
   * In one transaction, unless stale: when `holds`, raises an alarm (none active), repeats the
   * active one (the last evaluation did not hold) or updates its last value; otherwise, when
   * `clears`, clears the active one at `at`. Then records the evaluation as the standing.
   */
  applyEvaluation(evaluation: RuleEvaluation): Promise<EvaluationOutcome>;
  /** Undefined before any evaluation of that (rule, device). */
  evaluationStanding(ruleId: string, deviceId: string): Promise<EvaluationStanding | undefined>;
  getAlarm(alarmId: string): Promise<Alarm | undefined>;
  /** A ground's alarms, newest first (started time, then id), filtered; a page when `query` says so. */
  listAlarms(groundId: string, query?: AlarmQuery): Promise<Alarm[]>;
  /** Acknowledged by `userId` at `at` (an alarm already acknowledged keeps its first). NOT_FOUND when missing. */
  acknowledgeAlarm(alarmId: string, userId: string, at: number): Promise<Alarm>;
  /** Cleared by a member at `at` (one already cleared is unchanged). NOT_FOUND when missing. */
  clearAlarm(alarmId: string, at: number): Promise<Alarm>;
}
