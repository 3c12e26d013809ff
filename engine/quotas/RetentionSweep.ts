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
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import { Periodic } from '../kernel/Periodic.ts';
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
  readonly #periodic: Periodic;

  constructor(options: RetentionSweepOptions) {
    this.#o = options;
    this.#periodic = new Periodic({ clock: options.clock, intervalMs: options.intervalMs ?? 3_600_000, run: () => this.sweep(), onError: options.onError });
  }

  start(): void {
    this.#periodic.start();
  }

  stop(): Promise<void> {
    return this.#periodic.stop();
  }

  /** One sweep: every ground with a retention, its devices' states before its cutoff. */
  async sweep(): Promise<SweepReport> {
    const report: SweepReport = { grounds: 0, devices: 0 };
    const now = this.#o.clock.now();
    for (const quota of await this.#o.registry.listQuotas()) {
      if (quota.retentionDays === undefined || this.#periodic.stopped) continue;
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
}
