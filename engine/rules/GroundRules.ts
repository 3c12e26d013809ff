/**
 * A ground's rules as the evaluator judges them (engine/rules/RuleEvaluator.ts): each with its
 * value tests, found by asset and device; silence rules apart.
 */
import type { Rule } from '../ports/ruleRegistry.ts';
import { valueTest, type ValueTest } from './conditions.ts';

export interface JudgedRule {
  rule: Rule;
  /** The integrations its actions deliver its alarms to. */
  integrations: readonly string[];
  holds: ValueTest;
  /** Without a clear condition: the condition no longer holds. */
  clears: ValueTest;
}

/** No rule of the ground can judge a state of the device (GroundRules.listedFor). */
export const NONE = Symbol('no rule');

export function judge(rule: Rule): JudgedRule {
  // A silence rule judges no value: holds and clears are never asked.
  const holds = 'silentFor' in rule.condition ? () => false : valueTest(rule.condition);
  const clear = rule.clear === undefined ? undefined : valueTest(rule.clear);
  const integrations = rule.actions.flatMap((action) => ('integration' in action ? [action.integration] : []));
  return { rule, integrations, holds, clears: clear ?? ((value) => !holds(value)) };
}

/**
 * A ground's rules found by asset, and by device for those that list devices: what concerns a
 * state is found in the time of two map lookups, however many rules the ground has.
 */
export class GroundRules {
  readonly #everyDevice = new Map<string, JudgedRule[]>();
  readonly #byDevice = new Map<string, Map<string, JudgedRule[]>>();
  readonly #silence: GroundRules | undefined;
  readonly #byId: Map<string, JudgedRule>;

  /** `rules` of one ground; those of silence (`silentFor`) are apart, in silenceOf. */
  constructor(rules: readonly JudgedRule[], silence = true) {
    this.#byId = new Map(rules.map((judged) => [judged.rule.id, judged]));
    const isSilence = (judged: JudgedRule) => 'silentFor' in judged.rule.condition;
    if (silence) {
      const silent = rules.filter(isSilence);
      this.#silence = silent.length === 0 ? undefined : new GroundRules(silent, false);
      rules = rules.filter((judged) => !isSilence(judged));
    }
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

  get watchesSilence(): boolean {
    return this.#silence !== undefined;
  }

  byId(ruleId: string): JudgedRule | undefined {
    return this.#byId.get(ruleId);
  }

  /** The silence rules a state of `asset` of `deviceId` is a sighting for; undefined for none. */
  silenceOf(deviceId: string, asset: string): readonly JudgedRule[] | undefined {
    return this.#silence?.of(deviceId, asset);
  }

  /** The rules judging a state of `asset` of `deviceId` (silence rules apart), oldest first; undefined for none. */
  of(deviceId: string, asset: string): readonly JudgedRule[] | undefined {
    return this.ofListed(this.#byDevice.get(deviceId), asset);
  }

  /**
   * The rules that list `deviceId`, by asset, to look up once for all the states of an uplink
   * (ofListed); NONE when no rule can judge a state of the device at all.
   */
  listedFor(deviceId: string): ReadonlyMap<string, JudgedRule[]> | undefined | typeof NONE {
    const listed = this.#byDevice.get(deviceId);
    return listed === undefined && this.#everyDevice.size === 0 ? NONE : listed;
  }

  /** As of(), with the device's listed rules (listedFor). */
  ofListed(listedByAsset: ReadonlyMap<string, JudgedRule[]> | undefined, asset: string): readonly JudgedRule[] | undefined {
    const every = this.#everyDevice.size === 0 ? undefined : this.#everyDevice.get(asset);
    const listed = listedByAsset?.get(asset);
    if (listed === undefined) return every;
    if (every === undefined) return listed;
    return [...every, ...listed].sort((a, b) => a.rule.createdAt - b.rule.createdAt || (a.rule.id < b.rule.id ? -1 : 1));
  }
}
