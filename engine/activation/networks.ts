/**
 * The activation networks (spec §2.8, DESIGN.md §6) from their data file, schemas/networks.json:
 * which network ids exist, the spec's `net1`…`net8` aliases, and the keys each network's
 * `network.data` takes. normaliseNetwork() is the one gate an activation option's network passes.
 *
 * Decisions where the spec is silent:
 * - A request may name a network by its id or its alias; what is stored and answered is the id
 *   (DESIGN.md §6: the interface exposes the operators' real identifiers).
 * - `data` takes the network's required keys and the optional keys of its kind, nothing else: a
 *   misspelt key (`deveui`) is refused rather than kept and silently ignored.
 * - Every value is a string matching the key's pattern; hex keys are stored upper case without
 *   `-`/`:` separators.
 * - LoRaWAN data is answered with every optional key, null when not supplied, `activationMethod`
 *   `abp` (spec §2.8); a network without keys answers `{}`.
 */
import table from '../../schemas/networks.json' with { type: 'json' };
import { Compile } from 'typebox/compile';
import { FleetError } from '../kernel/errors.ts';
import { NetworkTable, type NetworkKey } from '../../schemas/networks.ts';
import type { NetworkBinding } from '../../schemas/registry.ts';
import { isPlainObject } from '../kernel/isPlainObject.ts';

export interface NetworkInfo {
  id: string;
  alias: string;
  kind: string;
  title: string;
  downlink: boolean;
  required: readonly string[];
  optional: readonly string[];
  /** Values of optional keys left out; keys without a default answer null. */
  defaults: Readonly<Record<string, string>>;
}

interface CompiledKey {
  key: NetworkKey;
  re: RegExp;
}

function invalid(field: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { field } });
}

/** A key name safe to show in a message or a field path. */
function shown(key: string): string {
  return key.length > 40 ? `${key.slice(0, 40)}…` : key;
}

export class NetworkCatalog {
  readonly #byName = new Map<string, NetworkInfo>();
  readonly #keys = new Map<string, CompiledKey>();
  readonly #list: NetworkInfo[] = [];

  /** Checks the table (schema, kinds, keys, unique ids and aliases); throws an Error naming the problem. */
  constructor(data: unknown) {
    const validator = Compile(NetworkTable);
    if (!validator.Check(data)) {
      const first = validator.Errors(data)[0];
      throw new Error(`network table: ${first?.instancePath ?? ''} ${first?.message ?? 'invalid'}`);
    }
    for (const [name, key] of Object.entries(data.keys)) this.#keys.set(name, { key, re: new RegExp(key.pattern) });
    for (const n of data.networks) {
      const kind = data.kinds[n.kind];
      if (kind === undefined) throw new Error(`network table: ${n.id} has unknown kind ${n.kind}`);
      for (const k of [...n.required, ...kind.optional]) {
        if (!this.#keys.has(k)) throw new Error(`network table: ${n.id} uses undefined key ${k}`);
      }
      const info: NetworkInfo = Object.freeze({
        id: n.id,
        alias: n.alias,
        kind: n.kind,
        title: n.title,
        downlink: n.downlink,
        required: Object.freeze([...n.required]),
        optional: Object.freeze(kind.optional.filter((k) => !n.required.includes(k))),
        defaults: Object.freeze({ ...kind.defaults }),
      });
      for (const name of [n.id, n.alias]) {
        if (this.#byName.has(name)) throw new Error(`network table: ${name} appears twice`);
        this.#byName.set(name, info);
      }
      this.#list.push(info);
    }
  }

  /** By id or alias. */
  get(name: string): NetworkInfo | undefined {
    return typeof name === 'string' ? this.#byName.get(name) : undefined;
  }

  list(): readonly NetworkInfo[] {
    return this.#list;
  }

  /**
   * The binding as stored and answered: the network's id, its keys checked and normalised, and
   * for LoRaWAN every optional key present (null or its default). VALIDATION_FAILED names the
   * field, prefixed by `field` (e.g. `options.0.network.data.devEui`).
   */
  normalise(binding: unknown, field: string): NetworkBinding {
    if (!isPlainObject(binding)) throw invalid(field, 'must be an object {networkId, data}');
    const name = binding.networkId;
    if (typeof name !== 'string') throw invalid(`${field}.networkId`, 'must be a string');
    const network = this.get(name);
    if (network === undefined) {
      throw invalid(`${field}.networkId`, `unknown network "${shown(name)}"; one of ${this.#list.map((n) => `${n.id} (${n.alias})`).join(', ')}`);
    }
    const data = binding.data ?? {};
    if (!isPlainObject(data)) throw invalid(`${field}.data`, 'must be an object');
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(data)) {
      if (!network.required.includes(key) && !network.optional.includes(key)) {
        const accepted = [...network.required, ...network.optional];
        throw invalid(`${field}.data.${shown(key)}`, `not a key of network ${network.id}${accepted.length > 0 ? `; it takes ${accepted.join(', ')}` : '; its data is {}'}`);
      }
      const value = data[key];
      const optionalNull = value === null && network.optional.includes(key);
      if (!optionalNull) out[key] = this.#value(key, value, `${field}.data.${key}`);
    }
    for (const key of network.required) {
      if (!(key in out)) throw invalid(`${field}.data.${key}`, `required by network ${network.id}`);
    }
    const result: Record<string, unknown> = {};
    for (const key of network.required) result[key] = out[key];
    for (const key of network.optional) result[key] = key in out ? out[key] : (network.defaults[key] ?? null);
    return { networkId: network.id, data: result };
  }

  #value(key: string, value: unknown, field: string): string {
    const { key: spec, re } = this.#keys.get(key)!;
    if (typeof value !== 'string' || value.length > 128 || !re.test(value)) throw invalid(field, spec.description);
    return spec.normalise === 'hex' ? value.replace(/[-:]/g, '').toUpperCase() : value;
  }
}

/** The networks of schemas/networks.json. */
export const networks = new NetworkCatalog(table);
