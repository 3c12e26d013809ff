/**
 * When each device was last seen (engine/ports/connectivityRegistry.ts `lastSeenAt`): the engine
 * tells it the uplinks it processed — stored states and refusals that name a device — and it keeps
 * the latest receive time per device, written to the registry once per interval (default 1 s) in
 * one statement, and once more when the engine stops. `lastSeenAt` therefore lags the uplink by up
 * to the interval (plus the write). Memory: one entry per device seen in an interval, also while
 * the registry is down (a failed flush is merged back and retried after the one backoff).
 */
import { CoalescingWriter } from '../kernel/CoalescingWriter.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { ConnectivityRegistry } from '../ports/connectivityRegistry.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';

export interface ActivityRecorderOptions {
  registry: Pick<ConnectivityRegistry, 'recordActivity'>;
  clock: Clock;
  /** Longest a device's last seen time waits before it is written, ms. Default 1000. */
  flushIntervalMs?: number;
  onError?(error: FleetError, retrying: boolean): void;
}

export class ActivityRecorder {
  readonly #writer: CoalescingWriter<string, number>;

  constructor(options: ActivityRecorderOptions) {
    this.#writer = new CoalescingWriter<string, number>({
      clock: options.clock,
      intervalMs: options.flushIntervalMs ?? 1000,
      merge: (older, newer) => (newer > older ? newer : older),
      write: (entries) => options.registry.recordActivity([...entries].map(([deviceId, at]) => ({ deviceId, at }))),
      onError: options.onError,
    });
  }

  /** Devices waiting for a flush. */
  get pending(): number {
    return this.#writer.size;
  }

  /** States stored: their devices were seen at their receive times. */
  stored(rows: readonly StateRow[]): void {
    // The rows of one uplink come together: one map update per run of the same device and time.
    let device = '';
    let at = -1;
    for (const row of rows) {
      if (row.deviceId === device && row.receivedAt === at) continue;
      device = row.deviceId;
      at = row.receivedAt;
      this.#writer.set(device, at);
    }
  }

  /** Refusals of the engine: the device was seen all the same. */
  refused(letters: readonly DeadLetter[]): void {
    for (const letter of letters) this.#writer.set(letter.envelope.deviceId, letter.envelope.receivedAt);
  }

  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** Writes what waits, then records nothing more. */
  stop(): Promise<void> {
    return this.#writer.stop();
  }
}
