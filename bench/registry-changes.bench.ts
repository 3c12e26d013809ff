/**
 * How fast a registry change made in one process reaches another process's caches over PostgreSQL
 * LISTEN/NOTIFY (adapters/registry-changes/PostgresRegistryChanges.ts), against baselines measured
 * in the same run: a `SELECT 1` round trip on the same server and the IPC hop the measurement uses.
 * Not part of the test suite.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx node bench/registry-changes.bench.ts
 *   BENCH_CHANGES=500 BENCH_CACHED=100000 …
 *
 * The listener is a child process (its own LISTEN session and RegistryLookups holding BENCH_CACHED
 * cached principals), which acknowledges each change over IPC once its lookups dropped what the
 * change touched. Phases, each BENCH_CHANGES changes:
 * 1. feed: device-changed published one at a time; publish → acknowledged.
 * 2. revocation: revokeToken on a publishing PostgreSQL registry (the UPDATE commits, then NOTIFY),
 *    one at a time; call → acknowledged, and how long the listener's apply() took.
 * 3. burst: every change published at once; first publish → last acknowledged.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPostgresRegistry } from '../adapters/postgres/createPostgresRegistry.ts';
import { PostgresRegistryChanges } from '../adapters/registry-changes/PostgresRegistryChanges.ts';
import { publishingRegistry } from '../engine/access/publishingRegistry.ts';
import { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import { newToken } from '../engine/access/tokens.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import type { Principal } from '../engine/ports/registry.ts';
import type { RegistryChange } from '../engine/ports/registryChanges.ts';

const CHANGES = Number(process.env.BENCH_CHANGES ?? 500);
const CACHED = Number(process.env.BENCH_CACHED ?? 100_000);
const url = process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST;

type ToChild = { warm: string[] } | { ping: number };
type Heard = { heard: string; applyMs: number };
type FromChild = { ready: true } | { warmed: number } | { pong: number } | Heard;

const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
};
const summary = (values: number[]) => `p50 ${percentile(values, 0.5).toFixed(2)} ms  p95 ${percentile(values, 0.95).toFixed(2)} ms  max ${Math.max(...values).toFixed(2)} ms`;
const keyOf = (change: RegistryChange) => (change.kind === 'device-changed' ? change.deviceId : change.kind === 'token-revoked' ? change.tokenHash : change.kind);

async function listener(schema: string): Promise<void> {
  const send = (message: FromChild) => process.send!(message);
  const principal: Principal = { scope: 'device', subjectId: 'D'.repeat(22) };
  // The lookups' registry answers every token: the cache, not the database, is what is measured here.
  const lookups = new RegistryLookups({
    registry: { authenticate: async () => principal, getDevice: async () => undefined, getAssetById: async () => undefined, memberRole: async () => undefined },
    clock: systemClock,
    cacheTtlMs: 3_600_000,
  });
  const changes = await PostgresRegistryChanges.open({ url: url!, schema, clock: systemClock });
  changes.subscribe((change) => {
    const started = performance.now();
    lookups.apply(change);
    send({ heard: keyOf(change), applyMs: performance.now() - started });
  });
  process.on('message', async (message: ToChild) => {
    if ('ping' in message) send({ pong: message.ping });
    else {
      for (const token of message.warm) await lookups.principal(token);
      send({ warmed: message.warm.length });
    }
  });
  process.on('disconnect', () => void changes.close().then(() => process.exit(0)));
  send({ ready: true });
}

/** The listener child process: `next()` is its next answer other than a change heard, `heard(key)` the change of that key heard. */
interface Listener {
  child: ChildProcess;
  next(): Promise<FromChild>;
  heard(key: string): Promise<Heard>;
  /** Has the listener look these tokens up, so its cache holds them. */
  warm(tokens: string[]): Promise<void>;
}

function startListener(schema: string): Listener {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, ['--listener', schema], { stdio: 'inherit' });
  const waiting = new Map<string, (message: Heard) => void>();
  const other: Array<(message: FromChild) => void> = [];
  child.on('message', (message: FromChild) => {
    if ('heard' in message) waiting.get(message.heard)?.(message);
    else other.shift()?.(message);
  });
  const next = () => new Promise<FromChild>((resolve) => other.push(resolve));
  return {
    child,
    next,
    heard: (key) => new Promise<Heard>((resolve) => waiting.set(key, resolve)),
    async warm(tokens) {
      const warmed = next();
      child.send({ warm: tokens } satisfies ToChild);
      await warmed;
    },
  };
}

/** A `SELECT 1` round trip on the server, and the IPC hop to the listener, one way. */
async function baselines(listener: Listener): Promise<{ roundTrips: number[]; ipc: number[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const roundTrips: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const t = performance.now();
    await client.query('SELECT 1');
    roundTrips.push(performance.now() - t);
  }
  await client.end();
  const ipc: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const t = performance.now();
    const pong = listener.next();
    listener.child.send({ ping: i } satisfies ToChild);
    await pong;
    ipc.push((performance.now() - t) / 2);
  }
  return { roundTrips, ipc };
}

/** 1. feed: device-changed published one at a time; publish → acknowledged. */
async function feed(listener: Listener, changes: PostgresRegistryChanges): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const deviceId = randomBytes(16).toString('hex').slice(0, 22);
    const t = performance.now();
    const ack = listener.heard(deviceId);
    await changes.publish({ kind: 'device-changed', deviceId });
    await ack;
    times.push(performance.now() - t);
  }
  return times;
}

/** 2. revocation through the registry, one token at a time. */
async function revocationRows(listener: Listener, raw: Awaited<ReturnType<typeof createPostgresRegistry>>, registry: ReturnType<typeof publishingRegistry>): Promise<string[]> {
  const user = await raw.createUser({ name: 'bench' });
  const ground = await raw.createGround({ name: 'bench', userId: user.entity.id });
  const device = await raw.createDevice({ groundId: ground.id, name: 'bench', assets: [] });
  const tokens: string[] = [];
  for (let i = 0; i < CHANGES; i++) tokens.push(await raw.issueToken('device', device.device.id));
  await listener.warm(tokens);
  const { hashToken } = await import('../engine/access/tokens.ts');
  const revocation: number[] = [];
  const mutation: number[] = [];
  const apply: number[] = [];
  for (const token of tokens) {
    const t = performance.now();
    const ack = listener.heard(hashToken(token));
    const revoking = registry.revokeToken(token);
    await revoking;
    mutation.push(performance.now() - t);
    apply.push((await ack).applyMs);
    revocation.push(performance.now() - t);
  }
  return [
    `revoke    revokeToken call → other process's cache dropped  ${summary(revocation)}`,
    `          of which revokeToken (UPDATE, commit, NOTIFY)      ${summary(mutation)}`,
    `          listener's apply() with ${CACHED + CHANGES} cached principals  ${summary(apply)}`,
  ];
}

/** 3. burst: every change published at once; first publish → last acknowledged. */
async function burstRows(listener: Listener, changes: PostgresRegistryChanges): Promise<string[]> {
  const ids = Array.from({ length: CHANGES }, () => randomBytes(16).toString('hex').slice(0, 22));
  const acks = ids.map((id) => listener.heard(id));
  const t = performance.now();
  await Promise.all(ids.map((deviceId) => changes.publish({ kind: 'device-changed', deviceId })));
  await Promise.all(acks);
  const burstMs = performance.now() - t;
  return [
    `burst     ${CHANGES} published at once → last acknowledged  ${burstMs.toFixed(1)} ms (${Math.round(CHANGES / (burstMs / 1000)).toLocaleString('en-US')} changes/s)`,
    `          notifications sent ${changes.stats.sent}, dropped ${changes.stats.dropped}`,
  ];
}

async function main(): Promise<void> {
  if (!url) {
    console.log('skipped: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)');
    return;
  }
  const schema = `bench_changes_${randomBytes(4).toString('hex')}`;
  const raw = await createPostgresRegistry({ url, schema });
  const changes = await PostgresRegistryChanges.open({ url, schema, clock: systemClock });
  const registry = publishingRegistry(raw, changes);
  const listener = startListener(schema);
  const rows: string[] = [];
  try {
    await listener.next();
    const { roundTrips, ipc } = await baselines(listener);
    rows.push(`baseline  PostgreSQL SELECT 1 round trip        ${summary(roundTrips)}`);
    rows.push(`baseline  IPC one way (half a ping-pong)        ${summary(ipc)}`);
    // Warm the listener's cache: BENCH_CACHED other tokens.
    const fillers = Array.from({ length: CACHED }, () => newToken('device'));
    for (let i = 0; i < fillers.length; i += 10_000) await listener.warm(fillers.slice(i, i + 10_000));
    const fed = await feed(listener, changes);
    rows.push(`feed      publish → other process acknowledged  ${summary(fed)}   (×${CHANGES}; p50 ${(percentile(fed, 0.5) / percentile(roundTrips, 0.5)).toFixed(1)}× a SELECT 1)`);
    rows.push(...await revocationRows(listener, raw, registry));
    rows.push(...await burstRows(listener, changes));
  } finally {
    listener.child.disconnect();
    await changes.close();
    await raw.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  console.log(`registry changes over PostgreSQL LISTEN/NOTIFY (${CHANGES} changes per phase)`);
  for (const row of rows) console.log(row);
}

if (process.argv[2] === '--listener') await listener(process.argv[3]);
else await main();
