/**
 * Contract of the registry changes port (engine/ports/registryChanges.ts). Every adapter runs it:
 *
 *   registryChangesContract('postgres', async () => ({ open, dispose, drop, inject })).run();
 *
 * `open` gives another process's view of the same registry (a new instance on the same medium);
 * adapters that cannot be shared between instances (in-process) say `shared: false` and skip the
 * tests that need two. `drop` cuts an instance's connection the way a server restart would;
 * `inject` sends raw bytes on the medium, as any other client of it could.
 */
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import { isFleetError } from '../../engine/kernel/errors.ts';
import type { RegistryChange, RegistryChanges } from '../../engine/ports/registryChanges.ts';
import { waitFor } from './log.contract.ts';

export interface RegistryChangesFixture {
  /** A new instance on this fixture's medium. */
  open(): Promise<RegistryChanges>;
  /** True when instances opened here hear each other (a shared medium). */
  shared: boolean;
  /** Closes what was opened and removes the test's data. */
  dispose(): Promise<void>;
  /** Cuts the instance's connection from the server side. */
  drop?(changes: RegistryChanges): Promise<void>;
  /** Sends a raw notification on the medium, bypassing publish. */
  inject?(payload: string): Promise<void>;
}

export interface RegistryChangesContractOptions {
  /** Bound of "within seconds" for deliveries between instances, and reconnections, ms. Default 5000. */
  timeoutMs?: number;
  /** How long the tests watch for something that must NOT arrive, ms. Default 300. */
  quietMs?: number;
}

const DEVICE = 'A'.repeat(22);
const GROUND = 'G'.repeat(22);
const USER = 'U'.repeat(22);
const INTEGRATION = 'I'.repeat(22);
const RULE = 'R'.repeat(22);
const HASH = 'ab'.repeat(32);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function registryChangesContract(name: string, factory: () => Promise<RegistryChangesFixture>, options: RegistryChangesContractOptions = {}) {
  const timeoutMs = options.timeoutMs ?? 5000;
  const quietMs = options.quietMs ?? 300;
  const test = suite<{ fixture: RegistryChangesFixture }>(`registry changes contract: ${name}`, { fixture: undefined as unknown as RegistryChangesFixture });
  test.before.each(async (context) => {
    context.fixture = await factory();
  });
  test.after.each(async (context) => {
    await context.fixture.dispose();
  });

  const record = (changes: RegistryChanges): RegistryChange[] => {
    const heard: RegistryChange[] = [];
    changes.subscribe((change) => heard.push(change));
    return heard;
  };

  test('own changes reach this process\'s listeners before publish resolves, each kind as published', async ({ fixture }) => {
    const a = await fixture.open();
    const heard = record(a);
    const sent: RegistryChange[] = [
      { kind: 'token-revoked', tokenHash: HASH },
      { kind: 'device-deleted', deviceId: DEVICE },
      { kind: 'device-changed', deviceId: DEVICE },
      { kind: 'membership-changed', groundId: GROUND, userId: USER },
      { kind: 'integration-changed', integrationId: INTEGRATION, groundId: GROUND },
      { kind: 'integration-deleted', integrationId: INTEGRATION, groundId: GROUND },
      { kind: 'rule-changed', ruleId: RULE, groundId: GROUND },
      { kind: 'rule-deleted', ruleId: RULE, groundId: GROUND },
      { kind: 'quota-changed', groundId: GROUND },
    ];
    for (const change of sent) {
      const before = heard.length;
      await a.publish(change);
      assert.is(heard.length, before + 1, `${change.kind} delivered before publish resolved`);
    }
    assert.equal(heard, sent);
    // The echo of its own notifications does not come back a second time.
    await sleep(quietMs);
    assert.equal(heard, sent);
  });

  test('a throwing listener does not stop the others; an unsubscribed one hears nothing more', async ({ fixture }) => {
    const a = await fixture.open();
    const heard: string[] = [];
    a.subscribe(() => { throw new Error('listener failure'); });
    const stop = a.subscribe((c) => heard.push(`first:${c.kind}`));
    a.subscribe((c) => heard.push(`second:${c.kind}`));
    await a.publish({ kind: 'device-changed', deviceId: DEVICE });
    assert.equal(heard, ['first:device-changed', 'second:device-changed']);
    stop();
    await a.publish({ kind: 'device-deleted', deviceId: DEVICE });
    assert.equal(heard, ['first:device-changed', 'second:device-changed', 'second:device-deleted']);
  });

  test('after close: publish fails CLOSED and listeners hear nothing', async ({ fixture }) => {
    const a = await fixture.open();
    const heard = record(a);
    await a.close();
    const error = await a.publish({ kind: 'device-changed', deviceId: DEVICE }).then(() => undefined, (e: unknown) => e);
    assert.ok(isFleetError(error) && error.code === 'CLOSED', `publish after close: ${String(error)}`);
    if (fixture.shared) {
      const b = await fixture.open();
      await b.publish({ kind: 'device-changed', deviceId: DEVICE });
      await sleep(quietMs);
    }
    assert.equal(heard, []);
    await a.close(); // idempotent
  });

  test('instances on one medium hear each other within seconds, once each and in order', async ({ fixture }) => {
    if (!fixture.shared) return;
    const a = await fixture.open();
    const b = await fixture.open();
    const heardA = record(a);
    const heardB = record(b);
    const fromA: RegistryChange[] = Array.from({ length: 20 }, (_, i) => ({ kind: 'device-changed', deviceId: `${'D'.repeat(20)}${String(i).padStart(2, '0')}` }));
    for (const change of fromA) await a.publish(change);
    await b.publish({ kind: 'token-revoked', tokenHash: HASH });
    await waitFor(() => heardB.length >= 21 && heardA.length >= 21, timeoutMs, 'both instances to hear every change');
    await sleep(quietMs);
    // b's own change reached b at once, maybe before a's notifications: order holds per publisher.
    assert.equal(heardB.filter((c) => c.kind === 'device-changed'), fromA);
    assert.equal(heardB.filter((c) => c.kind === 'token-revoked'), [{ kind: 'token-revoked', tokenHash: HASH }]);
    assert.equal(heardA, [...fromA, { kind: 'token-revoked', tokenHash: HASH }]);
  });

  test('every kind reaches the other instances as published', async ({ fixture }) => {
    if (!fixture.shared) return;
    const a = await fixture.open();
    const b = await fixture.open();
    const heardB = record(b);
    const sent: RegistryChange[] = [
      { kind: 'token-revoked', tokenHash: HASH },
      { kind: 'device-deleted', deviceId: DEVICE },
      { kind: 'device-changed', deviceId: DEVICE },
      { kind: 'membership-changed', groundId: GROUND, userId: USER },
      { kind: 'integration-changed', integrationId: INTEGRATION, groundId: GROUND },
      { kind: 'integration-deleted', integrationId: INTEGRATION, groundId: GROUND },
      { kind: 'rule-changed', ruleId: RULE, groundId: GROUND },
      { kind: 'rule-deleted', ruleId: RULE, groundId: GROUND },
      { kind: 'quota-changed', groundId: GROUND },
    ];
    for (const change of sent) await a.publish(change);
    await waitFor(() => heardB.length >= sent.length, timeoutMs, 'the other instance to hear every kind');
    assert.equal(heardB, sent);
  });

  test('malformed, oversized and forged notifications are ignored; valid ones still arrive', async ({ fixture }) => {
    if (fixture.inject === undefined) return;
    const a = await fixture.open();
    const heard = record(a);
    const good = (change: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ v: 1, origin: 'someoneElse', change, ...extra });
    const hostile = [
      '', 'not json', '{', 'null', '[]', '"text"', '{"v":1}',
      good({ kind: 'device-deleted', deviceId: DEVICE }, { v: 2 }),
      good({ kind: 'device-deleted', deviceId: 'short' }),
      good({ kind: 'device-deleted', deviceId: `${'A'.repeat(21)}\u0410` }), // Cyrillic А lookalike
      good({ kind: 'device-deleted', deviceId: DEVICE, extra: 'x'.repeat(100) }),
      good({ kind: 'token-revoked', tokenHash: HASH.toUpperCase() }),
      good({ kind: 'wipe-everything' }),
      good({ kind: 'membership-changed', groundId: GROUND }),
      JSON.stringify({ v: 1, origin: 'x'.repeat(33), change: { kind: 'device-changed', deviceId: DEVICE } }),
      JSON.stringify({ v: 1, origin: 'a b', change: { kind: 'device-changed', deviceId: DEVICE } }),
      good({ kind: 'device-changed', deviceId: DEVICE }, { padding: 'x'.repeat(6000) }),
      '{"__proto__":{"polluted":true},"v":1,"origin":"o","change":{"kind":"resync"}}',
    ];
    for (const payload of hostile) await fixture.inject(payload);
    await fixture.inject(good({ kind: 'device-changed', deviceId: DEVICE }));
    await waitFor(() => heard.length >= 1, timeoutMs, 'the valid notification');
    await sleep(quietMs);
    assert.equal(heard, [{ kind: 'device-changed', deviceId: DEVICE }]);
    assert.is(({} as Record<string, unknown>).polluted, undefined);
  });

  test('after the server drops the connection: reconnects, re-LISTENs, says resync, and sends what was published meanwhile', async ({ fixture }) => {
    if (fixture.drop === undefined || !fixture.shared) return;
    const a = await fixture.open();
    const b = await fixture.open();
    const heardA = record(a);
    const heardB = record(b);
    await fixture.drop(a);
    // Published by a while its connection is down or being reopened: still delivered here at once.
    // (On a busy machine the reconnection may already be done, its resync told first.)
    await a.publish({ kind: 'device-deleted', deviceId: DEVICE });
    assert.equal(heardA.filter((c) => c.kind !== 'resync'), [{ kind: 'device-deleted', deviceId: DEVICE }]);
    await waitFor(() => heardA.some((c) => c.kind === 'resync'), timeoutMs, 'a to reconnect (resync)');
    await waitFor(() => heardB.some((c) => c.kind === 'device-deleted'), timeoutMs, 'b to hear what a published while away');
    // a listens again: b's next change reaches it.
    await b.publish({ kind: 'token-revoked', tokenHash: HASH });
    await waitFor(() => heardA.some((c) => c.kind === 'token-revoked'), timeoutMs, 'a to hear b after reconnecting');
    assert.equal(heardB.filter((c) => c.kind === 'device-deleted').length, 1);
  });

  return test;
}
