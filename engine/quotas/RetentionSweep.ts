/**
 * Expires the states of grounds that have a retention quota (docs/grounds.md "Quotas"): once per
 * interval, run by every engine process, for each such ground its devices' states measured more
 * than `retentionDays` ago are deleted through the state retention port. No per-row TTL can do it:
 * the states table holds no ground (and ClickHouse 18.16 has no TTL at all).
 *
 * Idempotent and safe with several engines: each sweep deletes what is older than its own cutoff,
 * and deleting what another engine already deleted deletes nothing. The first sweep runs a random
 * part of the interval after start, so engines started together do not sweep together.
 *
 * Memory: one page of device ids (1000) at a time.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { FleetRegistry } from '../ports/fleetRegistry.ts';
import type { QuotaRegistry } from '../ports/quotaRegistry.ts';
import type { StateRetention } from '../ports/stateRetention.ts';

const DAY_MS = 86_400_000;
const PAGE = 1000;

export interface RetentionSweepOptions {
  registry: Pick<QuotaRegistry, 'listQuotas'> & Pick<FleetRegistry, 'listDevices'>;
  retention: StateRetention;
  clock: Clock;
  /** Time between sweeps, ms. Default 3 600 000 (an hour). */
  intervalMs?: number;
  /** A sweep that failed; the next runs on its schedule. */
  onError?(error: FleetError): void;
}

export interface SweepReport {
  grounds: number;
  devices: number;
}

export class RetentionSweep {
  readonly #o: RetentionSweepOptions;
  readonly #intervalMs: number;
  #timer: TimerHandle | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(options: RetentionSweepOptions) {
    this.#o = options;
    this.#intervalMs = options.intervalMs ?? 3_600_000;
  }

  start(): void {
    this.#schedule(Math.floor(Math.random() * this.#intervalMs));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#running?.catch(() => undefined);
  }

  /** One sweep: every ground with a retention, its devices' states before its cutoff. */
  async sweep(): Promise<SweepReport> {
    const report: SweepReport = { grounds: 0, devices: 0 };
    const now = this.#o.clock.now();
    for (const quota of await this.#o.registry.listQuotas()) {
      if (quota.retentionDays === undefined || this.#stopped) continue;
      report.grounds++;
      const before = now - quota.retentionDays * DAY_MS;
      let after: { createdAt: number; id: string } | undefined;
      for (;;) {
        const devices = await this.#o.registry.listDevices(quota.groundId, { limit: PAGE, ...(after === undefined ? {} : { after }) });
        if (devices.length === 0) break;
        await this.#o.retention.expireStates(devices.map((d) => d.id), before);
        report.devices += devices.length;
        if (devices.length < PAGE) break;
        const last = devices[devices.length - 1];
        after = { createdAt: last.createdAt, id: last.id };
      }
    }
    return report;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      const running = this.#running = this.sweep().catch((error: unknown) => this.#o.onError?.(toFleetError(error)));
      void running.then(() => this.#schedule(this.#intervalMs));
    }, delayMs);
  }
}
