/**
 * Committed offsets of consumer groups: one JSON file per group under groups/, replaced atomically.
 * Commits of a group that arrive while its file is being written are merged into the next write,
 * as appends are (one tmp write + fsync + rename per round, however many commits it carries).
 * Only written (durable) offsets are ever reported: retention must not act on a commit a crash
 * could undo.
 */
import { rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommitRequest } from '../../engine/ports/log.ts';
import type { LocalLogStats } from './LocalLogStats.ts';
import { writeFileAtomic, writeFileAtomicSync } from './atomicWrite.ts';

type Offsets = Map<string, Map<number, number>>;

interface GroupEntry {
  name: string;
  file: string;
  wanted: Offsets;
  durable: Offsets;
  writing: Promise<void> | undefined;
  /** Commits waiting for the write after the one in flight. */
  waiters: Array<{ resolve(): void; reject(error: unknown): void }>;
}

function copy(offsets: Offsets): Offsets {
  return new Map([...offsets].map(([topic, partitions]) => [topic, new Map(partitions)]));
}

function serialize(name: string, offsets: Offsets): string {
  const topics = Object.fromEntries([...offsets].map(([topic, partitions]) => [topic, Object.fromEntries(partitions)]));
  return `${JSON.stringify({ version: 1, group: name, offsets: topics })}\n`;
}

/** Readable and filesystem-safe whatever the group name: a sanitized prefix plus a hash. */
export function groupFileName(group: string): string {
  const prefix = group.replace(/[^a-zA-Z0-9._-]/g, '_').slice(0, 40);
  return `${prefix}-${createHash('sha256').update(group).digest('hex').slice(0, 16)}.json`;
}

function parseGroupFile(file: string): { name: string; offsets: Offsets } {
  const corrupt = (why: string, cause?: unknown): FleetError =>
    new FleetError('CORRUPT_LOG', `consumer group offsets file ${file}: ${why}`, { cause, detail: { file } });
  let root: unknown;
  try {
    root = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw corrupt('not valid JSON', error);
  }
  const { version, group, offsets } = (root ?? {}) as Record<string, unknown>;
  if (version !== 1 || typeof group !== 'string' || group.length === 0 || offsets === null || typeof offsets !== 'object') {
    throw corrupt('expected { "version": 1, "group": string, "offsets": { topic: { partition: offset } } }');
  }
  const parsed: Offsets = new Map();
  for (const [topic, partitions] of Object.entries(offsets as Record<string, unknown>)) {
    if (partitions === null || typeof partitions !== 'object') throw corrupt(`offsets of topic ${topic} must be an object`);
    const map = new Map<number, number>();
    for (const [key, value] of Object.entries(partitions as Record<string, unknown>)) {
      const partition = Number(key);
      if (!/^\d+$/.test(key) || !Number.isSafeInteger(partition) || typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
        throw corrupt(`bad offset ${JSON.stringify(value)} for ${topic}/${key}`);
      }
      map.set(partition, value);
    }
    parsed.set(topic, map);
  }
  return { name: group, offsets: parsed };
}

export class OffsetStore {
  readonly dir: string;
  #groups = new Map<string, GroupEntry>();
  #stats: LocalLogStats;

  private constructor(dir: string, stats: LocalLogStats) {
    this.dir = dir;
    this.#stats = stats;
  }

  static load(dir: string, stats: LocalLogStats): OffsetStore {
    mkdirSync(dir, { recursive: true });
    const store = new OffsetStore(dir, stats);
    for (const name of readdirSync(dir).sort()) {
      const file = join(dir, name);
      // a leftover .tmp is a rewrite that never reached its rename: the old file is still current
      if (name.endsWith('.tmp')) { unlinkSync(file); continue; }
      if (!name.endsWith('.json')) continue;
      const { name: group, offsets } = parseGroupFile(file);
      if (join(dir, groupFileName(group)) !== file) throw new FleetError('CORRUPT_LOG', `${file} holds group ${group}, which belongs in ${groupFileName(group)}`, { detail: { file } });
      store.#groups.set(group, { name: group, file, wanted: copy(offsets), durable: offsets, writing: undefined, waiters: [] });
    }
    return store;
  }

  /** Durable committed offset, or undefined when the group never committed that partition. */
  committed(group: string, topic: string, partition: number): number | undefined {
    return this.#groups.get(group)?.durable.get(topic)?.get(partition);
  }

  /** Groups with a durable commit on `topic`. */
  groupsOn(topic: string): string[] {
    const out: string[] = [];
    for (const entry of this.#groups.values()) if (entry.durable.has(topic)) out.push(entry.name);
    return out;
  }

  /** Forgets a group: its file is removed once a write under way has finished. */
  async remove(group: string): Promise<void> {
    const entry = this.#groups.get(group);
    if (entry === undefined) return;
    this.#groups.delete(group);
    await entry.writing;
    await rm(entry.file, { force: true });
  }

  commit(group: string, offsets: CommitRequest[]): Promise<void> {
    let entry = this.#groups.get(group);
    if (!entry) {
      entry = { name: group, file: join(this.dir, groupFileName(group)), wanted: new Map(), durable: new Map(), writing: undefined, waiters: [] };
      this.#groups.set(group, entry);
    }
    for (const { topic, partition, offset } of offsets) {
      let partitions = entry.wanted.get(topic);
      if (!partitions) entry.wanted.set(topic, partitions = new Map());
      partitions.set(partition, offset);
    }
    return this.#write(entry);
  }

  #write(entry: GroupEntry): Promise<void> {
    if (entry.writing) return new Promise((resolve, reject) => { entry.waiters.push({ resolve, reject }); });
    const snapshot = copy(entry.wanted);
    const writing = writeFileAtomic(entry.file, serialize(entry.name, snapshot)).then(() => {
      entry.durable = snapshot;
      this.#stats.offsetWrites++;
    });
    entry.writing = writing.finally(() => {
      entry.writing = undefined;
      const waiters = entry.waiters;
      entry.waiters = [];
      if (waiters.length > 0) {
        this.#write(entry).then(() => { for (const w of waiters) w.resolve(); }, (error) => { for (const w of waiters) w.reject(error); });
      }
    }).catch(() => undefined);
    return writing;
  }

  /**
   * Lowers committed offsets above `end` to `end`, synchronously and durably (used on open, when a
   * cut tail took records back: a commit past the end would make the consumer skip the records
   * that will be appended at those offsets).
   */
  clampSync(topic: string, partition: number, end: number): boolean {
    let changed = false;
    for (const entry of this.#groups.values()) {
      const durable = entry.durable.get(topic);
      const current = durable?.get(partition);
      if (durable === undefined || current === undefined || current <= end) continue;
      durable.set(partition, end);
      entry.wanted.get(topic)?.set(partition, end);
      writeFileAtomicSync(entry.file, serialize(entry.name, entry.durable));
      this.#stats.offsetWrites++;
      changed = true;
    }
    return changed;
  }

  /** Waits for writes in flight. */
  async flush(): Promise<void> {
    for (;;) {
      const writing = [...this.#groups.values()].map((e) => e.writing).filter((w) => w !== undefined);
      if (writing.length === 0) return;
      await Promise.all(writing);
    }
  }
}
