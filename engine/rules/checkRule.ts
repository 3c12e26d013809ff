/**
 * Whether a rule can hold on its ground's devices, before the registry stores it (the registry
 * checks only what it owns: the ground, and that listed devices are in it). Every problem is
 * named by its path in the request body, all at once:
 *
 * - durations (`for`, `silentFor`) are ISO 8601 durations of at most a year, `for` above zero;
 *   `silentFor` takes neither `for` (its duration is the silence) nor `clear` (a state clears it);
 * - `outside` is [lower, higher];
 * - the asset: a listed device must have it; without `devices`, at least one device of the ground
 *   must (a rule on an asset no device has is most likely a typo);
 * - the condition and `clear` against every declaration of the asset on the covered devices:
 *   `above`, `below` and `outside` need a number or integer profile, `outsideArea` a location
 *   profile (an object profile with numeric `latitude` and `longitude`), `equals` a value the
 *   profile accepts;
 * - a command action: the asset is an actuator on the covered devices and the value fits its
 *   profile there; an integration action: an integration of the same ground.
 */
import { FleetError } from '../kernel/errors.ts';
import { compileProfile } from '../uplink/admission/profile.ts';
import type { AssetDeclaration } from '../ports/ruleRegistry.ts';
import type { RuleAction, RuleClear, RuleCondition } from '../../schemas/rules.ts';
import { MAX_RULE_DURATION_MS } from '../../schemas/rules.ts';
import { parseDuration } from './duration.ts';

export interface RuleShape {
  asset: string;
  devices?: readonly string[];
  condition: RuleCondition;
  for?: string;
  clear?: RuleClear;
  actions?: readonly RuleAction[];
}

export interface RuleCheckContext {
  /** RuleRegistry.assetDeclarations for this ground and the rule's devices. */
  declarations(asset: string): Promise<{ declarations: AssetDeclaration[]; missing: string[] }>;
  /** The ground of an integration; undefined when there is none. */
  integrationGround(integrationId: string): Promise<string | undefined>;
  groundId: string;
}

export interface FieldProblem {
  path: string;
  message: string;
}

/** Resolves when the rule can hold; otherwise rejects with VALIDATION_FAILED listing every problem (`detail.errors`). */
export async function checkRule(rule: RuleShape, context: RuleCheckContext): Promise<void> {
  const problems = await ruleProblems(rule, context);
  if (problems.length > 0) {
    throw new FleetError('VALIDATION_FAILED', problems.map((p) => `${p.path}: ${p.message}`).join('; '), { detail: { errors: problems } });
  }
}

export async function ruleProblems(rule: RuleShape, context: RuleCheckContext): Promise<FieldProblem[]> {
  const problems: FieldProblem[] = [];
  const add = (path: string, message: string) => problems.push({ path: `body.${path}`, message });
  const silent = 'silentFor' in rule.condition;
  if (rule.for !== undefined) {
    if (silent) add('for', 'does not apply to silentFor: its duration is the silence');
    else checkDuration(rule.for, 'for', add, 1);
  }
  if (silent) {
    checkDuration((rule.condition as { silentFor: string }).silentFor, 'condition.silentFor', add, 1000);
    if (rule.clear !== undefined) add('clear', 'does not apply to silentFor: the next state clears the alarm');
  }
  checkRange(rule.condition, 'condition', add);
  if (rule.clear !== undefined) checkRange(rule.clear, 'clear', add);

  const { declarations, missing } = await context.declarations(rule.asset);
  for (const id of missing) add('devices', `device ${id} is not in this ground or has no asset "${rule.asset}"`);
  if (declarations.length === 0 && missing.length === 0) add('asset', `no device of this ground has an asset "${rule.asset}"`);
  for (const declaration of declarations) {
    const problem = fits(rule.condition, declaration);
    if (problem !== undefined) add('condition', problem);
    const clearProblem = rule.clear === undefined ? undefined : fits(rule.clear, declaration);
    if (clearProblem !== undefined) add('clear', clearProblem);
  }

  for (const [i, action] of (rule.actions ?? []).entries()) {
    if ('command' in action) {
      const { asset, value } = action.command;
      const target = await context.declarations(asset);
      if (target.declarations.length === 0 || target.missing.length > 0) add(`actions/${i}/command/asset`, `the devices of this rule have no asset "${asset}" to command`);
      for (const declaration of target.declarations) {
        if (declaration.is !== 'actuator') add(`actions/${i}/command/asset`, `"${asset}" is a ${declaration.is}; only actuators take commands`);
        else {
          const problem = valueProblem(declaration, value);
          if (problem !== undefined) add(`actions/${i}/command/value`, problem);
        }
      }
    } else if ((await context.integrationGround(action.integration)) !== context.groundId) {
      add(`actions/${i}/integration`, `no integration ${action.integration} in this ground`);
    }
  }
  // One line per problem, however many devices declare the asset alike.
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.path}\u0000${p.message}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

function checkDuration(text: string, path: string, add: (path: string, message: string) => void, minimumMs: number): void {
  const parsed = parseDuration(text);
  if ('problem' in parsed) add(path, parsed.problem);
  else if (parsed.ms < minimumMs) add(path, minimumMs >= 1000 ? 'must be at least a second' : 'must be longer than zero');
  else if (parsed.ms > MAX_RULE_DURATION_MS) add(path, 'must be at most a year (P366D)');
}

function checkRange(condition: RuleCondition | RuleClear, path: string, add: (path: string, message: string) => void): void {
  if ('outside' in condition && !(condition.outside[0] < condition.outside[1])) add(`${path}.outside`, 'must be [lower, higher]');
}

const typesOf = (profile: Record<string, unknown>): unknown[] => (Array.isArray(profile.type) ? profile.type : [profile.type]);

function isNumeric(profile: Record<string, unknown>): boolean {
  const types = typesOf(profile).filter((t) => t !== 'null');
  return types.length > 0 && types.every((t) => t === 'number' || t === 'integer');
}

function isLocation(profile: Record<string, unknown>): boolean {
  const properties = profile.properties as Record<string, Record<string, unknown>> | undefined;
  return typesOf(profile).includes('object') && properties !== undefined && typeof properties === 'object'
    && ['latitude', 'longitude'].every((name) => properties[name] !== undefined && isNumeric(properties[name]));
}

function fits(condition: RuleCondition | RuleClear, declaration: AssetDeclaration): string | undefined {
  const { profile } = declaration;
  if ('above' in condition || 'below' in condition || 'outside' in condition) {
    return isNumeric(profile) ? undefined : `a threshold needs a number or integer asset; its profile is ${describe(profile)}`;
  }
  if ('outsideArea' in condition) {
    return isLocation(profile) ? undefined : `outsideArea needs a location asset (an object with numeric latitude and longitude); its profile is ${describe(profile)}`;
  }
  if ('equals' in condition) {
    const problem = valueProblem(declaration, condition.equals);
    return problem === undefined ? undefined : `equals: the asset can never hold this value (${problem})`;
  }
  return undefined;
}

function valueProblem(declaration: AssetDeclaration, value: unknown): string | undefined {
  if (value === undefined) return 'a value is needed';
  try {
    return compileProfile(declaration.profile)(value);
  } catch (error) {
    return `the asset's profile is unusable: ${(error as Error).message}`;
  }
}

function describe(profile: Record<string, unknown>): string {
  return `of type ${JSON.stringify(profile.type ?? 'any').slice(0, 60)}`;
}
