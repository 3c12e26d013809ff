/**
 * RegistryChanges within one process (engine/ports/registryChanges.ts): the embedded registry's
 * adapter, where every edge and engine sharing the registry lives in this process.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { Listeners } from '../../engine/kernel/Listeners.ts';
import type { RegistryChange, RegistryChanges } from '../../engine/ports/registryChanges.ts';

export class InProcessRegistryChanges implements RegistryChanges {
  readonly #listeners: Listeners<RegistryChange>;
  #closed = false;

  /** `onError`: a listener threw (the others still ran). */
  constructor(onError: (error: unknown) => void = () => undefined) {
    this.#listeners = new Listeners(onError);
  }

  async publish(change: RegistryChange): Promise<void> {
    if (this.#closed) throw new FleetError('CLOSED', 'registry changes: closed');
    this.#listeners.emit(change);
  }

  subscribe(listener: (change: RegistryChange) => void): () => void {
    if (this.#closed) return () => undefined;
    return this.#listeners.add(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}
