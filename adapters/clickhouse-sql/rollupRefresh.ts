/**
 * A store's refreshes of its rollups (stateRollups.ts), off the append path. An append only notes
 * the minute buckets it touched (and, per minute, its devices while few); a refresh `intervalMs`
 * after the last one ended recomputes the noted minutes that are settled, at most
 * MINUTES_PER_REFRESH of them, oldest first, from the raw table read with FINAL, then the hours and
 * days holding them. An append never waits for a refresh; a burst is caught up over as many
 * refreshes as its minutes need.
 *
 * A refresh reads every raw row of the minutes it recomputes, so a minute that appends keep
 * touching (the current one) is left until it has been quiet for `intervalMs` or was first noted
 * `maxLagMs` ago: each raw row is then read about once or twice, where refreshing the current
 * minute every `intervalMs` would read it up to 60 / `intervalMs` times.
 *
 * Rollup rows are ReplacingMergeTree on a version: each refresh writes a greater one than the last,
 * and refreshes run one after another, so the row kept was computed from the latest (never
 * smaller) set of raw rows. A minute noted while its refresh runs is noted again and refreshed by
 * a later one: the refresh read the raw table after the note was taken, but maybe before the rows
 * that noted it again were inserted.
 */
import { systemClock, type Clock, type TimerHandle } from '../../engine/kernel/clock.ts';
import type { StateRow } from '../../schemas/messages.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { MAX_LISTED_DEVICES, minuteRanges, refreshCoarserSql, refreshMinutesSql, ROLLUPS, type Touched } from './stateRollups.ts';
import { quoteString, type StateTableNames } from './stateTable.ts';

/**
 * Minutes one refresh recomputes at most: a day of them. Its cost is the raw rows of those minutes
 * (of the devices noted, when few) plus the minute rows of their hours and days.
 */
export const MINUTES_PER_REFRESH = 1440;

/**
 * Device ids listed over all noted minutes at most; past it the minutes are noted for every
 * device (read whole, as a large append's are), so that a backlog over many minutes of a few
 * devices each stays small in memory.
 */
const MAX_LISTED_TOTAL = 100_000;

/** Default time between refreshes, ms, and how long a minute stays untouched before it is refreshed. */
export const ROLLUP_REFRESH_MS = 2000;

/** Default longest a noted minute waits for a refresh while appends keep touching it, ms. */
export const ROLLUP_MAX_LAG_MS = 60_000;

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

/** A noted minute: its devices (undefined: every device), the note that first marked it, and when it was first and last noted (ms). */
interface Noted {
  devices: Set<string> | undefined;
  note: number;
  firstAt: number;
  lastAt: number;
}

export interface RollupRefreshOptions {
  /** Whether the states table has the compact layout. */
  compact: boolean;
  /** Time between refreshes, ms, and how long a minute stays untouched before it is refreshed. Default ROLLUP_REFRESH_MS. */
  intervalMs?: number;
  /** Longest a noted minute waits while appends keep touching it, ms. Default ROLLUP_MAX_LAG_MS. */
  maxLagMs?: number;
  /** Called with a refresh's error; its minutes stay noted and are tried again at the next one. */
  onError?: (error: unknown) => void;
  /** Times the refreshes and when a minute was noted (whether it has settled). Default systemClock. */
  clock?: Clock;
}

export function createRollupRefresh(executor: Pick<SqlExecutor, 'command'>, names: StateTableNames, options: RollupRefreshOptions): RollupRefresh {
  const { compact } = options;
  const intervalMs = options.intervalMs ?? ROLLUP_REFRESH_MS;
  const maxLagMs = options.maxLagMs ?? ROLLUP_MAX_LAG_MS;
  const clock = options.clock ?? systemClock;
  const pending = new Map<number, Noted>();
  let inFlight = new Map<number, Noted>();
  let notes = 0;
  /** Device ids in the sets of `pending`, about (those noted again after a failed refresh are not counted). */
  let listed = 0;
  let queue: Promise<unknown> = Promise.resolve();
  let lastVersion = 0;
  // Wall time on purpose, not the clock: a version must exceed those that earlier processes wrote
  // to the same table, which only the wall clock orders.
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

  function unlistAll(): void {
    for (const noted of pending.values()) noted.devices = undefined;
    listed = 0;
  }

  /** One refresh of the oldest noted minutes: the settled ones, or every one (`all`). */
  async function refreshSome(all: boolean): Promise<void> {
    if (pending.size === 0) return;
    const now = clock.now();
    inFlight = new Map();
    for (const [minute, noted] of pending) {
      if (!all && now - noted.lastAt < intervalMs && now - noted.firstAt < maxLagMs) continue;
      inFlight.set(minute, noted);
      pending.delete(minute);
      listed = Math.max(0, listed - (noted.devices?.size ?? 0));
      if (inFlight.size === MINUTES_PER_REFRESH) break;
    }
    try {
      for (const touched of touchedOf(inFlight)) await recompute(touched);
    } catch (error) {
      for (const [minute, noted] of inFlight) renote(minute, noted);
      throw error;
    } finally {
      inFlight = new Map();
    }
  }

  /** Notes again a minute whose refresh failed, merged with what was noted meanwhile. */
  function renote(minute: number, failed: Noted): void {
    const noted = pending.get(minute);
    if (noted === undefined) {
      pending.set(minute, failed);
      return;
    }
    noted.note = Math.min(noted.note, failed.note);
    noted.firstAt = Math.min(noted.firstAt, failed.firstAt);
    if (noted.devices === undefined) return;
    if (failed.devices === undefined) noted.devices = undefined;
    else for (const d of failed.devices) noted.devices.add(d);
    if (noted.devices !== undefined && noted.devices.size > MAX_LISTED_DEVICES) noted.devices = undefined;
  }

  const earliestNote = () => {
    let earliest = Infinity;
    for (const map of [pending, inFlight]) for (const noted of map.values()) earliest = Math.min(earliest, noted.note);
    return earliest;
  };

  // The next refresh is due `intervalMs` after the last one ended, so that refreshes take at most
  // their share of the engine however long one takes (a slower one means more minutes per refresh).
  // The refreshes serve a store its process keeps open; they do not keep the process alive (the
  // system clock's timers are unref'd).
  let timer: TimerHandle | undefined;
  let stopped = false;
  function schedule(): void {
    if (stopped) return;
    timer = clock.setTimeout(() => {
      serially(() => refreshSome(false))
        .catch((error: unknown) => options.onError?.(error))
        .finally(schedule);
    }, intervalMs);
  }
  schedule();

  return {
    touched(rows) {
      const at = ++notes;
      const now = clock.now();
      let minute = NaN;
      let noted: Noted | undefined;
      for (const row of rows) {
        const m = row.ts - (((row.ts % 60_000) + 60_000) % 60_000);
        if (m !== minute) {
          minute = m;
          noted = pending.get(m);
          if (noted === undefined) pending.set(m, (noted = { devices: new Set(), note: at, firstAt: now, lastAt: now }));
          else noted.lastAt = now;
        }
        if (noted!.devices === undefined || noted!.devices.has(row.deviceId)) continue;
        noted!.devices.add(row.deviceId);
        if (noted!.devices.size > MAX_LISTED_DEVICES) noted!.devices = undefined;
        if (++listed > MAX_LISTED_TOTAL) unlistAll();
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
      while (earliestNote() <= upTo) await serially(() => refreshSome(true));
    },
    all() {
      return serially(() => recompute(undefined));
    },
    exclusive(work) {
      return serially(work);
    },
    async close() {
      stopped = true;
      timer?.cancel();
      while (pending.size > 0) await serially(() => refreshSome(true));
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
