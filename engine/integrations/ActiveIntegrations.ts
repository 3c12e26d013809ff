/**
 * Whether any integration exists (active, or disabled: re-enabled, it resumes with what it missed),
 * as the registry says: on the local log, topic `events` is written only while one does
 * (EventWriter `wanted`), in the process of the engine and in each edge worker (whose refusals of
 * whole uplinks go there too).
 *
 * A consumer of the process's registry changes: from the moment an integration change is heard it
 * answers yes, until the registry has been asked again. The process that creates an integration
 * hears the change before it answers 201, so what is stored right after is written; another
 * process hears it a moment later (over LISTEN/NOTIFY or the primary's channel). Until the registry
 * first answers, and while it cannot be asked, yes: writing events nobody reads costs throughput,
 * missing one an integration wanted would lose it.
 */
import type { Clock } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import type { IntegrationRegistry } from '../ports/integrationRegistry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';

const RETRY_MS = 5000;

export class ActiveIntegrations {
  readonly #registry: Pick<IntegrationRegistry, 'integrationCount'>;
  readonly #logger: Pick<Logger, 'warn'>;
  readonly #clock: Pick<Clock, 'setTimeout'>;
  #count = 0;
  /** Questions to the registry under way (1 until start() has an answer). */
  #asking = 1;
  /** The newest question answered, and the last asked: an older answer arriving late is ignored. */
  #applied = 0;
  #asked = 0;
  /** The last question failed: yes until one succeeds (asked again every RETRY_MS). */
  #unknown = false;
  #stopped = false;

  constructor(options: { registry: Pick<IntegrationRegistry, 'integrationCount'>; clock: Pick<Clock, 'setTimeout'>; logger: Pick<Logger, 'warn'> }) {
    this.#registry = options.registry;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** Whether events are wanted now. */
  get any(): boolean {
    return this.#asking > 0 || this.#unknown || this.#count > 0;
  }

  /** Asks the registry for the first time. */
  start(): Promise<void> {
    this.#asking--; // the initial 1 is replaced by this question
    return this.#ask();
  }

  stop(): void {
    this.#stopped = true;
  }

  /** A registry change (RegistryChangeFanOut consumer). */
  changed(change: RegistryChange): void {
    if (change.kind !== 'integration-changed' && change.kind !== 'integration-deleted') return;
    void this.#ask();
  }

  async #ask(): Promise<void> {
    const question = ++this.#asked;
    this.#asking++;
    try {
      const count = await this.#registry.integrationCount();
      if (question > this.#applied) {
        this.#applied = question;
        this.#count = count;
        this.#unknown = false;
      }
    } catch (error) {
      if (question > this.#applied) {
        this.#applied = question;
        this.#unknown = true;
      }
      this.#logger.warn('whether an integration exists could not be read: topic events is written meanwhile', { error: toFleetError(error).message });
      if (!this.#stopped) this.#clock.setTimeout(() => void (this.#unknown && !this.#stopped && this.#ask()), RETRY_MS);
    } finally {
      this.#asking--;
    }
  }
}
