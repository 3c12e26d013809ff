/**
 * How far the engine of this process has judged topic `uplinks`, as rule timers need it
 * (docs/rules.md "Timers"): per partition it holds, a receive time through which every uplink is
 * judged. A timer must not fire while a state that would end the silence or the hold still waits in
 * a partition (an engine catching up, or dead until the group gives its partitions to another).
 *
 * Each call reads the topic's end offsets and remembers when; a partition whose judged offsets
 * have reached the ends read by the previous call has judged everything received before that
 * previous read. Under steady load the progress trails the clock by about one interval.
 */
import type { Clock } from '../kernel/clock.ts';
import type { Log } from '../ports/log.ts';
import type { RuleProgress } from '../ports/alarmRegistry.ts';

export interface UplinkProgressOptions {
  /** The partitions held, each with the offset below which every uplink is judged (undefined before its first batch). */
  positions(): ReadonlyMap<number, number | undefined>;
  log: Pick<Log, 'endOffsets' | 'committed'>;
  topic: string;
  group: string;
  clock: Clock;
}

export class UplinkProgress {
  readonly #o: UplinkProgressOptions;
  #previous: { at: number; ends: readonly number[] } | undefined;

  constructor(options: UplinkProgressOptions) {
    this.#o = options;
  }

  /**
   * The partitions held that are through the previous call's time, and the topic's partition
   * count; undefined the first time (nothing to compare with yet). Call it before the sightings of
   * the uplinks it covers are recorded: the positions are read first.
   */
  async through(): Promise<{ progress: RuleProgress; partitions: number } | undefined> {
    const { log, topic, group, clock } = this.#o;
    const positions = [...this.#o.positions()];
    const previous = this.#previous;
    const at = clock.now();
    const ends = await log.endOffsets(topic);
    this.#previous = { at, ends };
    if (previous === undefined) return undefined;
    const progress: RuleProgress = [];
    for (const [partition, judged] of positions) {
      const position = judged ?? await log.committed(group, topic, partition);
      if (position >= (previous.ends[partition] ?? 0)) progress.push({ partition, through: previous.at });
    }
    return { progress, partitions: ends.length };
  }
}
