/**
 * Rules on the embedded service (app/createService.ts: local log, chDB, PGlite in a temp dir). Not
 * a test.
 *
 *   npx node bench/rules.bench.ts
 *   BENCH_DEVICES=10000 BENCH_RULES=1000 BENCH_UPLINKS=50000 npx node bench/rules.bench.ts
 *
 * 1. Throughput: uplinks of 4 states (as an edge admits them) appended as fast as the log takes
 *    them, round BENCH_DEVICES devices of one ground, timed until the engine has stored them all;
 *    with no rule, and with BENCH_RULES rules over those devices (each on one asset of its own
 *    10 devices; a threshold that 1 state in 1000 crosses, so alarms are raised and cleared as the
 *    run goes), two grounds of one service taking turns BENCH_ROUNDS times. Reported: the medians
 *    of data points/s and of CPU time per data point, and their ratios (target ≥ 0.9); the CPU
 *    ratio holds where the machine's speed drifts (a shared VM), the throughput one does not.
 * 2. Latency at low load: one device, one rule (`above 50`), 20 uplinks a second alternating 100
 *    and 0 (each 100 raises an alarm, each 0 clears it): from the append to the alarm in the
 *    registry, p50 and p99; and, as the baseline, from the append to the state in the store
 *    (target: the alarm at most 50 ms after the state, at the p50).
 * 3. Silence detection for BENCH_SILENT_DEVICES devices (default 1,000,000) of one ground, under
 *    one rule `silentFor: PT1H`, on PostgreSQL when BENCH_DATABASE_URL is set (the registry in its
 *    own process: the engine's memory is this process's), else on PGlite in this process (whose
 *    memory then holds the database too). A simulated clock: the rule is made (every device
 *    watched), 99 % of the devices send a state 10 minutes later (sightings recorded by 10 000, as
 *    an engine does each second), then the clock passes the hour and the evaluator fires the 1 %
 *    that stayed silent. Reported: CPU per sighting and per alarm raised, the cost of a look for
 *    due timers when none is, and the heap (peak, and retained after a collection) and RSS above
 *    those before (target ≤ 100 MB). `BENCH_ONLY=silence` runs this part alone; with
 *    `node --expose-gc --max-old-space-size=100` it shows the whole detection fits in a 100 MB heap.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createService, type Service } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';
import { Topics } from '../schemas/messages.ts';
import { useStartFlags } from '../test/support/startFlags.ts';
import { ingest, uplinkRecord } from './support/embeddedIngest.ts';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { createPostgresRegistry } from '../adapters/postgres/createPostgresRegistry.ts';
import type { SqlRegistry } from '../adapters/sql-registry/createSqlRegistry.ts';
import { SimulatedClock } from '../engine/kernel/clock.ts';
import { RuleEvaluator } from '../engine/rules/RuleEvaluator.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 50_000);
const DEVICES = env('BENCH_DEVICES', 10_000);
const RULES = env('BENCH_RULES', 1000);
const ROUNDS = env('BENCH_ROUNDS', 5);
const ASSETS = ['a0', 'a1', 'a2', 'a3'];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Above 900 for 1 uplink in 1000, every other time its device comes round: alarms raised and cleared as the run goes. */
const value = (_asset: string, k: number) => (k % 1000 === 999 && Math.floor(k / DEVICES) % 2 === 0 ? 1000 : k % 900);

/** The embedded service with two grounds of DEVICES devices each: one for rules, one with none. */
async function startService(dir: string): Promise<{ service: Service; groundId: string; devices: string[]; plain: string[] }> {
  const service = await createService({
    config: { ...defaultConfig, dataDir: dir, http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 }, mqtt: { ...defaultConfig.mqtt, port: -1 }, metrics: { host: '127.0.0.1', port: 0 } },
    logger: silentLogger,
  });
  const user = await service.registry.createUser({ name: 'bench' });
  const made: string[][] = [];
  let groundId = '';
  for (const name of ['rules', 'plain']) {
    const ground = await service.registry.createGround({ name, userId: user.entity.id });
    groundId ||= ground.id;
    const devices: string[] = [];
    for (let d = 0; d < DEVICES; d++) {
      const created = await service.registry.createDevice({ groundId: ground.id, name: `d${d}`, assets: ASSETS.map((name) => ({ name, is: 'sensor', profile: { type: 'number' } })) });
      devices.push(created.device.id);
    }
    made.push(devices);
  }
  return { service, groundId, devices: made[0], plain: made[1] };
}

/** One timed run: data points per second, and this process's CPU time per data point (µs). */
async function run(service: Service, devices: string[], round: number): Promise<{ rate: number; cpu: number }> {
  const points = UPLINKS * ASSETS.length;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await ingest(service, devices, ASSETS, UPLINKS, 1_000_000 * (round + 1), value);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { rate: points / seconds, cpu: (cpu.user + cpu.system) / points };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/** 3. Silence detection for a fleet: CPU and memory of the engine's side. */
async function silence(): Promise<void> {
  const n = env('BENCH_SILENT_DEVICES', 1_000_000);
  const url = process.env.BENCH_DATABASE_URL;
  const schema = `bench_silence_${Date.now().toString(36)}`;
  const clock = new SimulatedClock(Date.now());
  const registry: SqlRegistry = url === undefined ? await createPgliteRegistry({ clock }) : await createPostgresRegistry({ url, schema, clock });
  try {
    const user = await registry.createUser({ name: 'bench' });
    const ground = await registry.createGround({ name: 'silence', userId: user.entity.id });
    // A million devices through the API would take the bench's hour: in SQL, as createDevice makes them.
    const made = performance.now();
    for (let from = 1; from <= n; from += 100_000) {
      const to = Math.min(n, from + 99_999);
      await registry.executor.query(
        `INSERT INTO devices (id, ground_id, name, title, description, created_at)
         SELECT lpad(i::text, 22, '0'), $1, 'd' || i, 'd' || i, '', $2 FROM generate_series($3::int, $4::int) AS i`, [ground.id, clock.now(), from, to]);
      await registry.executor.query(
        `INSERT INTO assets (id, device_id, name, title, description, kind, profile, created_at)
         SELECT 'a' || lpad(i::text, 21, '0'), lpad(i::text, 22, '0'), 't', 't', '', 'sensor', '{"type":"number"}', $1 FROM generate_series($2::int, $3::int) AS i`, [clock.now(), from, to]);
    }
    console.log(`silence: ${fmt(n)} devices made in ${((performance.now() - made) / 1000).toFixed(1)} s (${url === undefined ? 'PGlite in this process' : 'PostgreSQL'})`);
    globalThis.gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    const rss0 = process.memoryUsage().rss;
    let heapPeak = heap0;
    let rssPeak = rss0;
    const sample = setInterval(() => {
      const m = process.memoryUsage();
      heapPeak = Math.max(heapPeak, m.heapUsed);
      rssPeak = Math.max(rssPeak, m.rss);
    }, 20);
    const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };

    let cpu0 = cpu();
    let wall0 = performance.now();
    const rule = await registry.createRule({ groundId: ground.id, name: 'quiet', asset: 't', condition: { silentFor: 'PT1H' }, severity: 'warning' });
    console.log(`silence: rule made, ${fmt(n)} devices watched in ${((performance.now() - wall0) / 1000).toFixed(1)} s`);
    const raised: string[] = [];
    const evaluator = new RuleEvaluator({
      rules: registry, alarms: registry, clock, logger: silentLogger,
      groundOf: () => ground.id,
      timers: { graceMs: 0 },
      onAlarm: (change, alarm) => { if (change === 'raised') raised.push(alarm.deviceId); },
    });
    clock.advance(600_000);
    const talking = Math.floor(n * 0.99);
    // The ground's rules read once (as an engine does on the ground's first state).
    await evaluator.judgement([{ deviceId: String(1).padStart(22, '0'), asset: 't', ts: clock.now(), receivedAt: clock.now(), value: 1, uplinkId: 'u0', seq: 0 }])?.();
    cpu0 = cpu();
    wall0 = performance.now();
    for (let i = 1; i <= talking; i++) {
      const deviceId = String(i).padStart(22, '0');
      const judge = evaluator.judgement([{ deviceId, asset: 't', ts: clock.now(), receivedAt: clock.now(), value: 1, uplinkId: `u${i}`, seq: 0 }]);
      if (judge !== undefined) throw new Error('a state of a silence rule alone is judged at once');
      if (i % 10_000 === 0) await evaluator.recordSightings();
    }
    await evaluator.recordSightings();
    const sightCpu = cpu() - cpu0;
    const sightWall = performance.now() - wall0;
    console.log(`silence: ${fmt(talking)} sightings recorded in ${(sightWall / 1000).toFixed(1)} s: ${(sightCpu * 1000 / talking).toFixed(1)} µs CPU each (this process)`);

    clock.advance(3_000_000);
    cpu0 = cpu();
    wall0 = performance.now();
    await evaluator.fireDue();
    const fireCpu = cpu() - cpu0;
    const fireWall = performance.now() - wall0;
    console.log(`silence: ${fmt(raised.length)} alarms raised (${fmt(n - talking)} silent devices) in ${(fireWall / 1000).toFixed(1)} s: ${(fireCpu * 1000 / Math.max(1, raised.length)).toFixed(0)} µs CPU each`);
    if (raised.length !== n - talking) throw new Error(`raised ${raised.length}, expected ${n - talking}`);
    const idle: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await evaluator.fireDue();
      idle.push(performance.now() - t);
    }
    idle.sort((a, b) => a - b);
    console.log(`silence: a look for due timers with none due (every second per engine): p50 ${percentile(idle, 50).toFixed(2)} ms`);
    clearInterval(sample);
    globalThis.gc?.();
    const retained = process.memoryUsage().heapUsed - heap0;
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
    const cap = /--max-old-space-size=(\d+)/.exec(process.execArgv.join(' '))?.[1];
    console.log(`silence: heap at the start ${mb(heap0)} MB; above it: peak ${mb(heapPeak - heap0)} MB (garbage included), retained ${mb(retained)} MB after a collection; peak RSS ${mb(rssPeak - rss0)} MB above the start${url === undefined ? ' (the PGlite database included)' : ''}; ${cap === undefined ? 'no heap cap (run with node --max-old-space-size=100 to show it fits in 100 MB)' : `ran within a heap cap of ${cap} MB`} (target ≤ 100 MB)`);
    await evaluator.stop();
    await registry.deleteRule(rule.id);
  } finally {
    if (url !== undefined) await registry.executor.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
    await registry.close();
  }
}

async function main(): Promise<void> {
  useStartFlags();
  if (process.env.BENCH_ONLY === 'silence') {
    await silence();
    return;
  }
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rules-bench-'));
    dirs.push(dir);
    return dir;
  };
  try {
    // One service, two grounds taking turns ROUNDS times each: the devices of one are covered by
    // the rules, those of the other by none. A machine whose speed drifts during the bench (a
    // shared VM) weighs on both alike; the ratio is of the medians.
    const { service, groundId, devices, plain } = await startService(fresh());
    for (let r = 0; r < RULES; r++) {
      const mine = Array.from({ length: 10 }, (_, i) => devices[(r * 10 + i) % devices.length]);
      await service.registry.createRule({ groundId, name: `r${r}`, asset: ASSETS[r % ASSETS.length], devices: [...new Set(mine)], condition: { above: 900 }, severity: 'minor' });
    }
    // Warm-up: every device seen once.
    await ingest(service, plain, ASSETS, Math.min(DEVICES, 20_000), 0, value);
    await ingest(service, devices, ASSETS, Math.min(DEVICES, 20_000), 0, value);
    const noneRuns: { rate: number; cpu: number }[] = [];
    const rulesRuns: { rate: number; cpu: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      noneRuns.push(await run(service, plain, round));
      rulesRuns.push(await run(service, devices, round));
    }
    const noneRate = median(noneRuns.map((r) => r.rate));
    const rulesRate = median(rulesRuns.map((r) => r.rate));
    const noneCpu = median(noneRuns.map((r) => r.cpu));
    const rulesCpu = median(rulesRuns.map((r) => r.cpu));
    const alarms = (await service.registry.listAlarms(groundId, { limit: 1001 })).length;
    const each = (runs: { rate: number }[]) => runs.map((r) => fmt(r.rate)).join(', ');
    console.log(`no rule:                 ${fmt(noneRate)} data points/s (median of ${each(noneRuns)}); ${noneCpu.toFixed(2)} µs CPU per data point`);
    console.log(`${RULES} rules over ${DEVICES} devices: ${fmt(rulesRate)} data points/s (median of ${each(rulesRuns)}); ${rulesCpu.toFixed(2)} µs CPU per data point; ${alarms >= 1001 ? 'over 1000' : alarms} alarms raised`);
    console.log(`ratio: ${(rulesRate / noneRate).toFixed(2)} × no rule by throughput, ${(noneCpu / rulesCpu).toFixed(2)} × by CPU per data point (target ≥ 0.9)`);

    // 2. Latency at low load: one rule on one device.
    const device = devices[0];
    const rule = await service.registry.createRule({ groundId, name: 'latency', asset: 'a0', devices: [device], condition: { above: 50 }, severity: 'info' });
    const toAlarm: number[] = [];
    const toState: number[] = [];
    let k = 5_000_000;
    for (let i = 0; i < 100; i++) {
      const high = i % 2 === 0;
      const sentAt = Date.now();
      const record = uplinkRecord(device, ['a0'], k++, sentAt, () => (high ? 100 : 0));
      const raised = async () => (await service.registry.listAlarms(groundId, { deviceId: device, limit: 1000 })).filter((a) => a.ruleId === rule.id).length;
      const before = high ? await raised() : 0;
      const appended = performance.now();
      await service.log.append(Topics.uplinks, [record]);
      if (high) {
        const until = async (seen: () => Promise<boolean>) => {
          for (;;) {
            if (await seen()) return performance.now() - appended;
            if (performance.now() - appended > 10_000) throw new Error('not within 10 s');
            await sleep(1);
          }
        };
        const [state, alarm] = await Promise.all([
          until(async () => (await service.store.latest(device)).some((row) => row.asset === 'a0' && row.receivedAt === sentAt)),
          until(async () => (await raised()) > before),
        ]);
        toState.push(state);
        toAlarm.push(alarm);
      }
      await sleep(50);
    }
    toAlarm.sort((a, b) => a - b);
    toState.sort((a, b) => a - b);
    console.log(`latency at 20 uplinks/s: append → alarm p50 ${percentile(toAlarm, 50).toFixed(1)} ms, p99 ${percentile(toAlarm, 99).toFixed(1)} ms; append → state stored p50 ${percentile(toState, 50).toFixed(1)} ms (target: the alarm ≤ 50 ms after the state at the p50)`);
    await service.stop();
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  await silence();
}

await main();
