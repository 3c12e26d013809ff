/**
 * The states-per-second quota of grounds at one edge (docs/grounds.md "Quotas"): a token bucket per
 * limited ground, asked by admission (engine/uplink/UplinkAdmission.ts) for each uplink's states, on
 * every channel. The budget is the ground's, not each edge's: this edge takes its share, the rate
 * divided by the edges alive in the registry (each edge holds a lease there, EdgePresence), counted
 * every `refreshMs`; the bucket holds at most twice the share (a burst of twice the rate over all
 * edges). Quotas are all read at start and each again when a registry change says it changed, so a
 * new rate applies here within the time the change takes to arrive.
 *
 * Synchronous on the hot path: a Map lookup per uplink, nothing for a ground without a rate. A ground
 * over its rate costs only its own uplinks: buckets are per ground, and nothing waits.
 *
 * Memory: one bucket per ground with a rate (all of them are in memory, one row each).
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { GroundQuota, QuotaRegistry } from '../ports/quotaRegistry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';

export interface GroundRatesOptions {
  registry: Pick<QuotaRegistry, 'listQuotas' | 'getQuota' | 'liveEdges'>;
  clock: Clock;
  /** How often the live edges (the shares) are counted, ms. Default 1000. */
  refreshMs?: number;
  /** A registry read that failed: the rates in memory stay, and the read is tried again. */
  onError?(error: FleetError): void;
}

interface Bucket {
  /** The ground's rate over every edge, states per second. */
  perSecond: number;
  tokens: number;
  /** Epoch ms of the last refill. */
  at: number;
}

/** The quota check admission asks: 0 when `states` may pass, else the seconds until they could. */
export interface StatesQuota {
  take(groundId: string, states: number): number;
}

export class GroundRates implements StatesQuota {
  readonly #o: GroundRatesOptions;
  readonly #buckets = new Map<string, Bucket>();
  /** Live edges sharing each rate (at least this one). */
  #edges = 1;
  #timer: TimerHandle | undefined;
  #stopped = false;
  /** Bumped by each full reload: a ground's reload that started before it does not overwrite it. */
  #generation = 0;

  constructor(options: GroundRatesOptions) {
    this.#o = options;
  }

  /** Reads every quota and the live edges; then keeps counting the edges. */
  async start(): Promise<void> {
    await this.#countEdges();
    await this.#reloadAll();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  /** Edges the rates are shared by, as last counted. */
  get edges(): number {
    return this.#edges;
  }

  /** Whether the ground has a rate here. */
  limits(groundId: string): boolean {
    return this.#buckets.has(groundId);
  }

  take(groundId: string, states: number): number {
    const bucket = this.#buckets.get(groundId);
    if (bucket === undefined || states <= 0) return 0;
    const share = bucket.perSecond / this.#edges;
    const burst = 2 * share;
    const now = this.#o.clock.now();
    // Clamped at each take: the share shrinks when another edge comes alive.
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(burst, bucket.tokens + (elapsed * share) / 1000);
    bucket.at = now;
    // A batch larger than the burst passes once the bucket is full, and leaves it in debt: the rate
    // over time still holds.
    const need = Math.min(states, burst);
    if (bucket.tokens >= need) {
      bucket.tokens -= states;
      return 0;
    }
    return Math.max(0.001, (need - bucket.tokens) / share);
  }

  /** A registry change (engine/ports/registryChanges.ts): a changed quota is read again; resync reads them all. */
  apply(change: RegistryChange): void {
    if (change.kind === 'quota-changed') void this.#reload(change.groundId);
    else if (change.kind === 'resync') void this.#reloadAll();
  }

  #set(quota: GroundQuota | undefined, groundId: string): void {
    const perSecond = quota?.statesPerSecond;
    if (perSecond === undefined) {
      this.#buckets.delete(groundId);
      return;
    }
    const bucket = this.#buckets.get(groundId);
    const share = perSecond / this.#edges;
    if (bucket === undefined) this.#buckets.set(groundId, { perSecond, tokens: 2 * share, at: this.#o.clock.now() });
    else {
      bucket.perSecond = perSecond;
      bucket.tokens = Math.min(bucket.tokens, 2 * share);
    }
  }

  async #reload(groundId: string): Promise<void> {
    const generation = this.#generation;
    try {
      const quota = await this.#o.registry.getQuota(groundId);
      if (generation === this.#generation) this.#set(quota, groundId);
    } catch (error) {
      this.#o.onError?.(toFleetError(error));
    }
  }

  async #reloadAll(): Promise<void> {
    const generation = ++this.#generation;
    try {
      const quotas = await this.#o.registry.listQuotas();
      if (generation !== this.#generation) return;
      const limited = new Set<string>();
      for (const quota of quotas) {
        if (quota.statesPerSecond === undefined) continue;
        limited.add(quota.groundId);
        this.#set(quota, quota.groundId);
      }
      for (const groundId of this.#buckets.keys()) if (!limited.has(groundId)) this.#buckets.delete(groundId);
    } catch (error) {
      this.#o.onError?.(toFleetError(error));
    }
  }

  async #countEdges(): Promise<void> {
    try {
      this.#edges = Math.max(1, await this.#o.registry.liveEdges(this.#o.clock.now()));
    } catch (error) {
      this.#o.onError?.(toFleetError(error));
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      void this.#countEdges().then(() => this.#schedule());
    }, this.#o.refreshMs ?? 1000);
  }
}
