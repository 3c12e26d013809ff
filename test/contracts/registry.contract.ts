/**
 * Contract of the registry (engine/ports/registry.ts): the harness every suite of its ports runs on,
 * and what the registry does as one database (close). Every adapter runs each port's suite:
 *   registryContract('pglite', factory).run();     // this file
 *   principalsContract('pglite', factory).run();   // principals.contract.ts
 *   fleetContract('pglite', factory).run();        // fleet.contract.ts
 *   deviceTypesContract, activationContract, activationLifecycleContract
 * The factory opens a fresh, empty registry; `sql` reads its database directly so the suites can
 * check what is stored (token hashes, cascades) rather than only what the ports answer.
 */
import { createHash } from 'node:crypto';
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import type { Test } from 'uvu';
import { SimulatedClock, type Clock } from '../../engine/kernel/clock.ts';
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';
import type { FleetRegistry, PrincipalRegistry, QuotaLimits, Registry } from '../../engine/ports/registry.ts';
import { ID_PATTERN } from '../../schemas/registry.ts';

export interface RegistryHarness {
  registry: Registry;
  /** Raw SQL against the registry's database. */
  sql(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Closes the registry if still open and removes whatever the harness created. */
  dispose(): Promise<void>;
}

/** `quotaDefaults`: the limits each new ground starts with (the configuration's `quotas`). */
export type RegistryFactory = (options: { clock: Clock; quotaDefaults?: QuotaLimits }) => Promise<RegistryHarness>;

/** What each test of a suite gets: the harness, the registry seen as the port(s) under test, the clock. */
export interface RegistryContext<R> {
  h: RegistryHarness;
  r: R;
  clock: SimulatedClock;
}

export const ID_RE = new RegExp(ID_PATTERN);
export const START = 1_700_000_000_000;
export const MALFORMED_IDS: unknown[] = ['', 'short', 'a'.repeat(23), "' OR '1'='1' --x", 'aaaaaaaaaaaaaaaaaaaaa-', 'aaaaaaaaaaaaaaaaaaaaa\u0000', 42, null, undefined, { id: 'x' }];
/** Passes a value of the wrong type where the port asks for a string. */
export const any = (v: unknown) => v as string;

export async function rejects(promise: Promise<unknown>, code: ErrorCode, field?: string): Promise<FleetError> {
  try {
    await promise;
  } catch (error) {
    assert.instance(error, FleetError, `expected a FleetError ${code}, got ${String(error)}`);
    const e = error as FleetError;
    assert.is(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    if (field !== undefined) assert.is(e.detail?.field, field, `field of ${e.message}`);
    return e;
  }
  assert.unreachable(`expected ${code}`);
  throw new Error('unreachable');
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A suite over one fresh registry, opened before its first test (clock at START) and disposed after its last. */
export function registrySuite<R>(title: string, factory: RegistryFactory): Test<RegistryContext<R>> {
  const test = suite<RegistryContext<R>>(title);
  test.before(async (ctx) => {
    ctx.clock = new SimulatedClock(START);
    ctx.h = await factory({ clock: ctx.clock });
    ctx.r = ctx.h.registry as R;
  });
  test.after(async (ctx) => {
    await ctx.h?.dispose();
  });
  return test;
}

/** A ground whose first member is a new user, `owner`. */
export async function ownedGround(r: Pick<PrincipalRegistry, 'createUser'> & Pick<FleetRegistry, 'createGround'>, name = 'ground') {
  const user = await r.createUser({ name: 'owner' });
  const g = await r.createGround({ name, userId: user.entity.id });
  return { user, ground: g };
}

export function registryContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<Registry>(`registry contract: ${name}`, factory);

  test('close: later calls fail with CLOSED; closing twice is harmless', async ({ r }) => {
    await r.close();
    await r.close();
    await rejects(r.createUser({ name: 'late' }), 'CLOSED');
    await rejects(r.authenticate(`fsu_${'A'.repeat(43)}`), 'CLOSED');
    await rejects(r.getDevice('A'.repeat(22)), 'CLOSED');
  });

  return test;
}
