/**
 * The integrations this process delivers: one IntegrationDelivery per active integration, started
 * from the registry and kept in step with its changes (created, changed, disabled, re-enabled,
 * deleted: registry changes `integration-changed` and `integration-deleted`). Changes of one
 * integration are applied one after another, in the order heard; a change is applied from the
 * integration as the registry has it then, so a late or repeated change cannot undo a newer one.
 *
 * A deleted integration's consumer group is deleted too (its cursor would otherwise stay on the
 * log; on the local log it would pin retention), once its deliveries have stopped.
 */
import { toFleetError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import type { Integration, IntegrationRegistry } from '../ports/integrationRegistry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import { deliveryGroup, type IntegrationDelivery } from './IntegrationDelivery.ts';

export interface DeliveriesOptions {
  registry: Pick<IntegrationRegistry, 'activeIntegrations' | 'getIntegration'>;
  /** Builds (does not start) an integration's deliveries. */
  delivery(integration: Integration): IntegrationDelivery;
  /** Forgets a consumer group (Log.deleteGroup). */
  deleteGroup(group: string): Promise<void>;
  /** Put before consumer group names (the configured topic prefix). */
  groupPrefix: string;
  logger: Logger;
}

export class Deliveries {
  readonly #o: DeliveriesOptions;
  readonly #running = new Map<string, IntegrationDelivery>();
  /** Per integration, the change being applied: the next one waits for it. */
  readonly #applying = new Map<string, Promise<void>>();
  #stopped = false;

  constructor(options: DeliveriesOptions) {
    this.#o = options;
  }

  /** Integrations delivered by this process now. */
  get active(): number {
    return this.#running.size;
  }

  /** Events gathered and not yet delivered, in this process. */
  get held(): number {
    let held = 0;
    for (const delivery of this.#running.values()) held += delivery.held;
    return held;
  }

  async start(): Promise<void> {
    for (const integration of await this.#o.registry.activeIntegrations()) await this.#apply(integration.id, integration);
  }

  /** A registry change (a consumer of the process's RegistryChangeFanOut). */
  changed(change: RegistryChange): void {
    if (change.kind !== 'integration-changed' && change.kind !== 'integration-deleted') return;
    const id = change.integrationId;
    const previous = this.#applying.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const integration = change.kind === 'integration-deleted' ? undefined : await this.#o.registry.getIntegration(id);
      await this.#apply(id, integration);
      if (integration === undefined) await this.#o.deleteGroup(deliveryGroup(this.#o.groupPrefix, id));
    }).catch((error: unknown) => {
      this.#o.logger.warn('an integration change could not be applied', { integrationId: id, error: toFleetError(error).message });
    }).finally(() => {
      if (this.#applying.get(id) === next) this.#applying.delete(id);
    });
    this.#applying.set(id, next);
  }

  /** Stops every integration's deliveries (what they hold is replayed from their cursors). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.allSettled([...this.#applying.values()]);
    await Promise.all([...this.#running.values()].map((delivery) => delivery.stop()));
    this.#running.clear();
  }

  /** Brings one integration's deliveries to what the registry says of it (undefined: gone). */
  async #apply(id: string, integration: Integration | undefined): Promise<void> {
    const running = this.#running.get(id);
    const wanted = !this.#stopped && integration !== undefined && integration.status === 'active';
    if (running !== undefined && wanted) {
      running.update(integration);
      return;
    }
    if (running !== undefined) {
      this.#running.delete(id);
      await running.stop();
      return;
    }
    if (!wanted) return;
    const delivery = this.#o.delivery(integration);
    this.#running.set(id, delivery);
    await delivery.start();
  }
}
