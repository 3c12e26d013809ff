/**
 * The grounds' states per second at an edge (engine/quotas/GroundRates.ts), following the process's
 * registry changes (a quota set or removed anywhere applies here as soon as the change arrives). The
 * service's edges (app/edgeRole.ts) and the test stacks build it here; each starts and stops it.
 */
import type { Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { GroundRates } from '../engine/quotas/GroundRates.ts';
import type { Ports } from './openPorts.ts';

export interface FollowedRates {
  readonly rates: GroundRates;
  /** Reads every quota and starts counting the live edges. */
  start(): Promise<void>;
  /** Stops following changes and counting edges. */
  stop(): void;
}

export function followGroundRates(ports: Pick<Ports, 'registry' | 'registryChanges'>, clock: Clock, logger?: Pick<Logger, 'warn'>): FollowedRates {
  const rates = new GroundRates({
    registry: ports.registry, clock,
    onError: (error) => logger?.warn('quotas of grounds not read; the rates in memory stay', { error }),
  });
  const unsubscribe = ports.registryChanges.add((change) => rates.apply(change));
  return {
    rates,
    start: () => rates.start(),
    stop() {
      unsubscribe();
      rates.stop();
    },
  };
}
