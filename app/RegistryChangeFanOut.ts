/**
 * The process's one subscription to its registry changes (engine/ports/registryChanges.ts). The
 * shared registry lookups drop what a change touches first, so a consumer that checks something
 * again (an MQTT connection's token after a resync) asks the registry, not the dropped answer; then
 * each consumer hears the change, in the order added: device actors, live streams, MQTT
 * connections, LPWAN bindings, metrics. A failing consumer is logged and the others still hear it.
 */
import type { Logger } from '../engine/kernel/logger.ts';
import type { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { RegistryChange, RegistryChanges } from '../engine/ports/registryChanges.ts';

export type RegistryChangeConsumer = (change: RegistryChange) => void;

export class RegistryChangeFanOut {
  readonly #consumers = new Set<RegistryChangeConsumer>();
  readonly #unsubscribe: () => void;

  constructor(options: { changes: Pick<RegistryChanges, 'subscribe'>; lookups: Pick<RegistryLookups, 'apply'>; logger?: Pick<Logger, 'warn'> }) {
    this.#unsubscribe = options.changes.subscribe((change) => {
      options.lookups.apply(change);
      for (const consumer of this.#consumers) {
        try {
          consumer(change);
        } catch (error) {
          options.logger?.warn('registry changes: a listener failed', { error });
        }
      }
    });
  }

  /** Hears every change from now on, until the returned function is called. */
  add(consumer: RegistryChangeConsumer): () => void {
    this.#consumers.add(consumer);
    return () => this.#consumers.delete(consumer);
  }

  close(): void {
    this.#unsubscribe();
    this.#consumers.clear();
  }
}
