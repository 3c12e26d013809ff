/** A contract suite whose tests each get a fresh fixture of the implementation under test. */
import type { Test } from 'uvu';
import { suite } from './suite.ts';

/** The suite `title`: before each test `factory` makes `fixture`; after it, the fixture's cleanup runs. */
export function fixtureSuite<F extends { cleanup(): Promise<void> }>(title: string, factory: () => Promise<F>): Test<{ fixture: F }> {
  const s = suite<{ fixture: F }>(title, {} as { fixture: F });
  s.before.each(async (ctx) => { ctx.fixture = await factory(); });
  s.after.each(async (ctx) => { await ctx.fixture.cleanup(); });
  return s;
}
