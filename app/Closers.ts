/** Named closers, run in reverse order of opening; a failing one is logged and the rest still run. */
import { toFleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';

export class Closers {
  readonly #list: Array<[string, () => Promise<void> | void]> = [];
  readonly #logger: Pick<Logger, 'error'>;
  constructor(logger: Pick<Logger, 'error'>) {
    this.#logger = logger;
  }
  add(name: string, close: () => Promise<void> | void): void {
    this.#list.push([name, close]);
  }
  async closeAll(): Promise<void> {
    for (const [name, close] of this.#list.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        this.#logger.error('close failed', { component: name, error: toFleetError(error) });
      }
    }
  }
}
