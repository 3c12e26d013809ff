/**
 * The subscriptions of an edge's live reader and how an event reaches them (docs/live.md):
 * subscriptions are indexed by the device or ground they follow, so an event costs the subscribers
 * it reaches, not a test of every subscription of the edge (1 000 consoles on 1 000 grounds); a
 * registry change ends the subscriptions it withdraws, and the expiry of the key that opened one
 * (LiveOwner.expiresAt) ends it on this edge at that time, without any change announced.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import { before, type LivePosition } from './liveCursor.ts';
import type { HeldEvent } from './heldEvents.ts';
import type { HubEvent, LiveFilter, LiveOwner, LiveSubscriber } from './liveTypes.ts';

export interface LiveEntry {
  filter: LiveFilter;
  owner: LiveOwner | undefined;
  subscriber: LiveSubscriber;
  /** Positions below which this subscriber has already seen everything (a resume). */
  from: LivePosition[] | undefined;
}

/** setTimeout's longest delay (a longer one fires at once): a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class LiveFanOut {
  readonly #entries = new Set<LiveEntry>();
  /** The entries by the device or the ground their filter names. */
  readonly #byDevice = new Map<string, Set<LiveEntry>>();
  readonly #byGround = new Map<string, Set<LiveEntry>>();
  readonly #onError: ((error: FleetError) => void) | undefined;
  readonly #clock: Pick<Clock, 'now' | 'setTimeout'>;
  /** The timers of the entries whose owner expires. */
  readonly #expiries = new Map<LiveEntry, TimerHandle>();
  /** When the last subscription ended (clock ms); none yet: nobody to resume. */
  lastLeftAt = Number.NEGATIVE_INFINITY;
  /** Subscriptions that refused an event (overflow) and were dropped. */
  dropped = 0;

  constructor(clock: Pick<Clock, 'now' | 'setTimeout'>, onError?: (error: FleetError) => void) {
    this.#clock = clock;
    this.#onError = onError;
  }

  get size(): number {
    return this.#entries.size;
  }

  add(entry: LiveEntry): void {
    this.#entries.add(entry);
    if (entry.owner?.expiresAt !== undefined) this.#expireAt(entry, entry.owner.expiresAt);
    const { deviceId, groundId } = entry.filter;
    const [index, key] = deviceId !== undefined ? [this.#byDevice, deviceId] : [this.#byGround, groundId];
    // A filter naming neither matches nothing: kept (it is a subscription) but never indexed.
    if (key === undefined) return;
    let set = index.get(key);
    if (set === undefined) index.set(key, set = new Set());
    set.add(entry);
  }

  remove(entry: LiveEntry): void {
    if (!this.#entries.delete(entry)) return;
    this.#expiries.get(entry)?.cancel();
    this.#expiries.delete(entry);
    if (this.#entries.size === 0) this.lastLeftAt = this.#clock.now();
    const { deviceId, groundId } = entry.filter;
    const [index, key] = deviceId !== undefined ? [this.#byDevice, deviceId] : [this.#byGround, groundId];
    if (key === undefined) return;
    const set = index.get(key);
    if (set?.delete(entry) === true && set.size === 0) index.delete(key);
  }

  /** Ends every subscription (the edge is closing). */
  closeAll(): void {
    for (const entry of [...this.#entries]) entry.subscriber.close('closing');
    for (const timer of this.#expiries.values()) timer.cancel();
    this.#expiries.clear();
    this.#entries.clear();
    this.#byDevice.clear();
    this.#byGround.clear();
  }

  /**
   * Ends the subscriptions a registry change may have withdrawn: those of a revoked token, of a
   * deleted device, and those a user holds through a ground whose membership changed (closed on a
   * join too: the client reconnects and is authorised again, which is never wrong).
   */
  apply(change: RegistryChange): void {
    switch (change.kind) {
      case 'token-revoked':
        return this.#closeWhere((e) => e.owner?.tokenHash === change.tokenHash);
      case 'device-deleted':
        return this.#closeWhere((e) => e.filter.deviceId === change.deviceId || (e.owner?.subjectId === change.deviceId));
      case 'membership-changed':
        return this.#closeWhere((e) => e.owner?.subjectId === change.userId && e.owner.groundId === change.groundId);
      case 'device-changed':
        // A device moved to another ground: its ground streams follow once the lookup cache expires.
        return;
    }
  }

  /** Ends the entry as a revocation would, once the clock reaches `at`. */
  #expireAt(entry: LiveEntry, at: number): void {
    const wait = at - this.#clock.now();
    this.#expiries.set(entry, this.#clock.setTimeout(() => {
      if (!this.#entries.has(entry)) return;
      if (this.#clock.now() < at) return this.#expireAt(entry, at);
      this.remove(entry);
      entry.subscriber.close('forbidden');
    }, Math.min(Math.max(0, wait), MAX_TIMER_MS)));
  }

  #closeWhere(predicate: (entry: LiveEntry) => boolean): void {
    for (const entry of [...this.#entries]) {
      if (predicate(entry)) {
        this.remove(entry);
        entry.subscriber.close('forbidden');
      }
    }
  }

  send(event: HeldEvent): void {
    const byDevice = this.#byDevice.get(event.deviceId);
    if (byDevice !== undefined) this.#sendTo(byDevice, event);
    const byGround = event.groundId === undefined ? undefined : this.#byGround.get(event.groundId);
    if (byGround !== undefined) this.#sendTo(byGround, event);
    // The frames served this fan-out; the ring keeps only the data (a resume builds them again).
    event.dropFrames();
  }

  /** Sends to the entries of one index set (an entry dropped meanwhile leaves it: Set iteration allows that). */
  #sendTo(entries: Set<LiveEntry>, event: HubEvent): void {
    for (const entry of entries) {
      if (!entry.filter.kinds.has(event.kind)) continue;
      if (entry.from !== undefined && before(event.position, entry.from[event.partition])) continue;
      let kept: boolean;
      try {
        kept = entry.subscriber.send(event);
      } catch (error) {
        // One broken connection must not fail the batch: it would come again for everybody.
        this.#onError?.(toFleetError(error));
        kept = false;
      }
      if (!kept) {
        this.remove(entry);
        this.dropped++;
      }
    }
  }
}

export function matches(filter: LiveFilter, event: HubEvent): boolean {
  if (!filter.kinds.has(event.kind)) return false;
  if (filter.deviceId !== undefined) return filter.deviceId === event.deviceId;
  return filter.groundId !== undefined && filter.groundId === event.groundId;
}
