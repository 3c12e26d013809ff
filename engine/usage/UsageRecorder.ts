/**
 * Counts what each device's ground used (engine/ports/usageRegistry.ts): the states an engine
 * stored, by their receive day, and the commands its command owner queued, by their issue day;
 * added to the registry once per interval (default 1 s), in one statement, and once more when the
 * engine stops. Memory: one entry per device and day counted in an interval, also while the
 * registry is down (a failed flush is merged back and retried).
 */
import { CoalescingWriter } from '../kernel/CoalescingWriter.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import { dayOf, type UsageRegistry } from '../ports/usageRegistry.ts';
import type { StateRow } from '../../schemas/messages.ts';

export interface UsageRecorderOptions {
  registry: Pick<UsageRegistry, 'recordUsage'>;
  clock: Clock;
  /** Longest a count waits before it is written, ms. Default 1000. */
  flushIntervalMs?: number;
  onError?(error: FleetError, retrying: boolean): void;
}

interface Counts {
  deviceId: string;
  day: number;
  states: number;
  commands: number;
}

export class UsageRecorder {
  readonly #writer: CoalescingWriter<string, Counts>;

  constructor(options: UsageRecorderOptions) {
    this.#writer = new CoalescingWriter<string, Counts>({
      clock: options.clock,
      intervalMs: options.flushIntervalMs ?? 1000,
      merge: (older, newer) => ({ ...older, states: older.states + newer.states, commands: older.commands + newer.commands }),
      write: (entries) => options.registry.recordUsage([...entries.values()]),
      onError: options.onError,
    });
  }

  /** States stored: counted for their devices on their receive days. */
  stored(rows: readonly StateRow[]): void {
    // The rows of one uplink come together: one map update per run of the same device and day.
    let i = 0;
    while (i < rows.length) {
      const { deviceId } = rows[i];
      const day = dayOf(rows[i].receivedAt);
      let n = 1;
      while (i + n < rows.length && rows[i + n].deviceId === deviceId && dayOf(rows[i + n].receivedAt) === day) n++;
      this.#add(deviceId, day, n, 0);
      i += n;
    }
  }

  /** A command queued for the device at `at`. */
  commandQueued(deviceId: string, at: number): void {
    this.#add(deviceId, dayOf(at), 0, 1);
  }

  #add(deviceId: string, day: number, states: number, commands: number): void {
    this.#writer.set(`${deviceId} ${day}`, { deviceId, day, states, commands });
  }

  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** Writes what waits, then counts nothing more. */
  stop(): Promise<void> {
    return this.#writer.stop();
  }
}
