/** A suite of HTTP edge tests over one registry adapter: the harness started before them, closed after. */
import type { Test } from 'uvu';
import { suite } from './suite.ts';
import { EdgeHarness, type RegistryFactory } from './edgeHarness.ts';

export interface HarnessContext {
  h: EdgeHarness;
  dispose(): Promise<void>;
}

/**
 * The suite `<title> (<factory name>)`: before its tests, a fresh registry from `factory` and an
 * EdgeHarness over it (with `options`) as `h`; after them, both closed.
 */
export function harnessSuite(title: string, factory: RegistryFactory, options: Omit<Parameters<typeof EdgeHarness.start>[0], 'registry'> = {}): Test<HarnessContext> {
  const test = suite<HarnessContext>(`${title} (${factory.name})`);

  test.before(async (ctx) => {
    const { registry, dispose, database } = await factory.create();
    ctx.h = await EdgeHarness.start({ ...options, registry, database });
    ctx.dispose = dispose;
  });

  test.after(async (ctx) => {
    await ctx.h.close();
    await ctx.dispose();
  });
  return test;
}
