/**
 * Topic metadata of a local log: topics.json in the data dir, `{ "version": 1, "topics": { name: { "partitions": n } } }`,
 * rewritten atomically when topics are added.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { TopicSpec } from '../../engine/ports/log.ts';
import { writeFileAtomic } from './atomicWrite.ts';

/** Kafka's rule for topic names, which also keeps them safe as directory names. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
export const MAX_PARTITIONS = 10_000;

export function validateTopicName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !TOPIC_NAME.test(name) || name === '.' || name === '..') {
    throw new FleetError('VALIDATION_FAILED', 'a topic name is 1 to 249 characters of a-z, A-Z, 0-9, ".", "_" and "-"', { detail: { topic: String(name) } });
  }
}

export function validateTopicSpec(spec: unknown): asserts spec is TopicSpec {
  if (spec === null || typeof spec !== 'object') throw new FleetError('VALIDATION_FAILED', 'a topic spec must be an object { name, partitions }');
  const { name, partitions, retentionMs } = spec as Record<string, unknown>;
  validateTopicName(name);
  if (typeof partitions !== 'number' || !Number.isSafeInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
    throw new FleetError('VALIDATION_FAILED', `topic ${name}: partitions must be an integer from 1 to ${MAX_PARTITIONS}`, { detail: { topic: name, partitions } });
  }
  if (retentionMs !== undefined && (typeof retentionMs !== 'number' || !Number.isSafeInteger(retentionMs) || retentionMs < 1)) {
    throw new FleetError('VALIDATION_FAILED', `topic ${name}: retentionMs must be a positive integer`, { detail: { topic: name, retentionMs } });
  }
}

export class TopicCatalog {
  readonly file: string;
  #topics: Map<string, number>;

  private constructor(file: string, topics: Map<string, number>) {
    this.file = file;
    this.#topics = topics;
  }

  static load(dir: string): TopicCatalog {
    const file = join(dir, 'topics.json');
    const topics = new Map<string, number>();
    if (!existsSync(file)) return new TopicCatalog(file, topics);
    const corrupt = (why: string): FleetError => new FleetError('CORRUPT_LOG', `${file}: ${why}`, { detail: { file } });
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new FleetError('CORRUPT_LOG', `${file} is not valid JSON`, { cause: error, detail: { file } });
    }
    const root = parsed as { version?: unknown; topics?: unknown } | null;
    if (root === null || typeof root !== 'object' || root.version !== 1 || root.topics === null || typeof root.topics !== 'object') {
      throw corrupt('expected { "version": 1, "topics": { ... } }');
    }
    for (const [name, meta] of Object.entries(root.topics as Record<string, unknown>)) {
      try {
        validateTopicSpec({ name, partitions: (meta as { partitions?: unknown } | null)?.partitions });
      } catch (error) {
        throw new FleetError('CORRUPT_LOG', `${file}: bad entry for topic ${name}`, { cause: error, detail: { file, topic: name } });
      }
      topics.set(name, (meta as { partitions: number }).partitions);
    }
    return new TopicCatalog(file, topics);
  }

  partitions(name: string): number | undefined {
    return this.#topics.get(name);
  }

  names(): string[] {
    return [...this.#topics.keys()];
  }

  /** Records the topics not known yet (first spec of a name wins) and returns them. */
  async add(specs: TopicSpec[]): Promise<TopicSpec[]> {
    const added: TopicSpec[] = [];
    const next = new Map(this.#topics);
    for (const spec of specs) {
      if (next.has(spec.name)) continue;
      next.set(spec.name, spec.partitions);
      added.push({ name: spec.name, partitions: spec.partitions });
    }
    if (added.length === 0) return added;
    // fromEntries defines own properties, so even a topic named "__proto__" is stored as data
    const topics = Object.fromEntries([...next].map(([name, partitions]) => [name, { partitions }]));
    await writeFileAtomic(this.file, `${JSON.stringify({ version: 1, topics }, null, 2)}\n`);
    this.#topics = next;
    return added;
  }
}
