/**
 * Rules port, a part of the registry (engine/ports/registry.ts): a ground's rules. SQL in
 * adapters/sql-registry/rules.ts; contract in test/contracts/rules.contract.ts.
 *
 * The registry stores what it is given: whether a rule can hold on the ground's devices (the
 * asset's profiles, a listed device having the asset, an action's command and integration) is the
 * caller's to check first, with `assetDeclarations` (engine/rules/checkRule.ts does it for the HTTP
 * edge). It checks what it owns: the ground exists, and a listed device is in it.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing rule or ground, or a listed device that is not in the ground (field `devices`),
 * UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Lookups answer undefined/false for a malformed id without querying.
 */
import type { AssetDeclaration, NewRule, Rule, RulePatch, RuleQuery } from '../../schemas/rules.ts';

export type { AssetDeclaration, NewRule, Rule, RulePatch, RuleQuery } from '../../schemas/rules.ts';

export interface RuleRegistry {
  /** NOT_FOUND when the ground, or a listed device in it, does not exist. */
  createRule(input: NewRule): Promise<Rule>;
  getRule(ruleId: string): Promise<Rule | undefined>;
  /** Rules of a ground, oldest first (created time, then id); a page when `query` says so. */
  listRules(groundId: string, query?: RuleQuery): Promise<Rule[]>;
  /** Changes the given fields (null removes `devices`, `for`, `clear`). NOT_FOUND when missing, or for a listed device not in the ground. */
  updateRule(ruleId: string, patch: RulePatch): Promise<Rule>;
  /** False when it did not exist. */
  deleteRule(ruleId: string): Promise<boolean>;
  /**
   * How an asset named `asset` is declared on the devices of the ground (only `devices`, when
   * given): the distinct (kind, profile) pairs, and the listed devices that are not in the ground or
   * have no such asset. Without `devices`, `missing` is empty and `declarations` empty when no
   * device of the ground has the asset.
   */
  assetDeclarations(groundId: string, asset: string, devices?: readonly string[]): Promise<{ declarations: AssetDeclaration[]; missing: string[] }>;
}
