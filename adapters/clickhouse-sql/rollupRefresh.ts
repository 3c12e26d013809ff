/**
 * A store's refreshes of its rollups (stateRollups.ts), off the append path. An append only notes
 * the minute buckets it touched (and, per minute, its devices while few); a refresh every
 * `intervalMs` recomputes the oldest noted minutes, at most MINUTES_PER_REFRESH of them, from the
 * raw table read with FINAL, then the hours and days holding them. An append never waits for a
 * refresh; a burst is caught up over as many refreshes as its minutes need.
 *
 * Rollup rows are ReplacingMergeTree on a version: each refresh writes a greater one than the last,
 * and refreshes run one after another, so the row kept was computed from the latest (never
 * smaller) set of raw rows. A minute noted while its refresh runs is noted again and refreshed by
 * the next one: the refresh read the raw table after the note was taken, but maybe before the rows
 * that noted it again were inserted.
 */
import type { StateRow } from '../../schemas/messages.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { MAX_LISTED_DEVICES, minuteRanges, refreshCoarserSql, refreshMinutesSql, ROLLUPS, type Touched } from './stateRollups.ts';
import { quoteString, type StateTableNames } from './stateTable.ts';

/**
 * Minutes one refresh recomputes at most: a day of them. Its cost is the raw rows of those minutes
 * (of the devices noted, when few) plus the minute rows of their hours and days.
 */
export const MINUTES_PER_REFRESH = 1440;

/** Default time between refreshes, ms: the lag of a rollup behind the states it sums, at rest. */
export const ROLLUP_REFRESH_MS = 2000;

export interface RollupRefresh {
  /** Notes the buckets these appended rows touched, for the next refresh; never waits. */
  touched(rows: readonly StateRow[]): void;
  /** Whether a noted minute of this device, not yet refreshed, lies in [from, to): its rollups may lag the states. */
  lagging(deviceId: string, from: number, to: number): boolean;
  /** Resolves once every bucket noted before the call is refreshed; rejects with a refresh's error. */
  caughtUp(): Promise<void>;
  /** Recomputes every bucket: rollups made beside states already stored start from all of them. */
  all(): Promise<void>;
  /** Runs `work` between two refreshes (a deletion that a refresh reading older rows would undo). */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  /** Stops the timer and refreshes what is noted. */
  close(): Promise<void>;
}

/** A noted minute: its devices (undefined: every device) and the note that first marked it. */
interface Noted {
  devices: Set<string> | undefined;
  note: number;
}

export interface RollupRefreshOptions {
  /** Whether the states table has the compact layout. */
  compact: boolean;
  /** Time between refreshes, ms. Default ROLLUP_REFRESH_MS. */
  intervalMs?: number;
  /** Called with a refresh's error; its minutes stay noted and are tried again at the next one. */
  onError?: (error: unknown) => void;
}

export function createRollupRefresh(executor: Pick<SqlExecutor, 'command'>, names: StateTableNames, options: RollupRefreshOptions): RollupRefresh {
  const { compact } = options;
  const pending = new Map<number, Noted>();
  let inFlight = new Map<number, Noted>();
  let notes = 0;
  let queue: Promise<unknown> = Promise.resolve();
  let lastVersion = 0;
  const nextVersion = () => (lastVersion = Math.max(Date.now() * 1000, lastVersion + 1));

  function serially<T>(work: () => Promise<T>): Promise<T> {
    const run = queue.then(work);
    queue = run.catch(() => {});
    return run;
  }

  // In order: hours read minutes, days read hours.
  async function recompute(touched: Touched | undefined): Promise<void> {
    await executor.command(refreshMinutesSql(names, touched, nextVersion(), compact));
    for (const rollup of ROLLUPS.slice(1)) await executor.command(refreshCoarserSql(names, rollup, touched, nextVersion()));
  }

  /** One refresh of the oldest noted minutes. */
  async function refreshSome(): Promise<void> {
    if (pending.size === 0) return;
    inFlight = new Map();
    for (const [minute, noted] of pending) {
      inFlight.set(minute, noted);
      pending.delete(minute);
      if (inFlight.size === MINUTES_PER_REFRESH) break;
    }
    try {
      for (const touched of touchedOf(inFlight)) await recompute(touched);
    } catch (error) {
      for (const [minute, noted] of inFlight) note(minute, noted.devices, noted.note);
      throw error;
    } finally {
      inFlight = new Map();
    }
  }

  function note(minute: number, devices: Set<string> | undefined, at: number): void {
    const noted = pending.get(minute);
    if (noted === undefined) {
      pending.set(minute, { devices: devices === undefined ? undefined : new Set(devices), note: at });
      return;
    }
    noted.note = Math.min(noted.note, at);
    if (noted.devices === undefined) return;
    if (devices === undefined) noted.devices = undefined;
    else for (const d of devices) noted.devices.add(d);
    if (noted.devices !== undefined && noted.devices.size > MAX_LISTED_DEVICES) noted.devices = undefined;
  }

  const earliestNote = () => {
    let earliest = Infinity;
    for (const map of [pending, inFlight]) for (const noted of map.values()) earliest = Math.min(earliest, noted.note);
    return earliest;
  };

  const timer = setInterval(() => {
    if (pending.size > 0) serially(refreshSome).catch((error: unknown) => options.onError?.(error));
  }, options.intervalMs ?? ROLLUP_REFRESH_MS);
  // The refreshes serve a store its process keeps open; they do not keep the process alive.
  timer.unref();

  return {
    touched(rows) {
      const at = ++notes;
      let minute = NaN;
      let noted: Noted | undefined;
      for (const row of rows) {
        const m = row.ts - (((row.ts % 60_000) + 60_000) % 60_000);
        if (m !== minute) {
          minute = m;
          noted = pending.get(m);
          if (noted === undefined) pending.set(m, (noted = { devices: new Set(), note: at }));
        }
        if (noted!.devices === undefined) continue;
        noted!.devices.add(row.deviceId);
        if (noted!.devices.size > MAX_LISTED_DEVICES) noted!.devices = undefined;
      }
    },
    lagging(deviceId, from, to) {
      for (const map of [pending, inFlight]) {
        for (const [minute, noted] of map) {
          if (minute + 60_000 > from && minute < to && (noted.devices === undefined || noted.devices.has(deviceId))) return true;
        }
      }
      return false;
    },
    async caughtUp() {
      const upTo = notes;
      while (earliestNote() <= upTo) await serially(refreshSome);
    },
    all() {
      return serially(() => recompute(undefined));
    },
    exclusive(work) {
      return serially(work);
    },
    async close() {
      clearInterval(timer);
      while (pending.size > 0) await serially(refreshSome);
    },
  };
}

/**
 * The noted minutes as at most two refreshes: those of every device (a large append spans the
 * fleet), and those of few devices, which read only these devices' granules.
 */
function touchedOf(minutes: ReadonlyMap<number, Noted>): Touched[] {
  const everyDevice: number[] = [];
  const some: number[] = [];
  let devices: Set<string> | undefined = new Set();
  for (const [minute, noted] of minutes) {
    if (noted.devices === undefined) {
      everyDevice.push(minute);
      continue;
    }
    some.push(minute);
    if (devices === undefined) continue;
    for (const d of noted.devices) devices.add(d);
    if (devices.size > MAX_LISTED_DEVICES) devices = undefined;
  }
  const out: Touched[] = [];
  if (everyDevice.length > 0) out.push({ devices: undefined, ranges: minuteRanges(everyDevice) });
  if (some.length > 0) out.push({ devices: devices === undefined ? undefined : [...devices].map(quoteString).join(', '), ranges: minuteRanges(some) });
  return out;
}
