/**
 * Ingest of the embedded service (app/createService.ts: local log, chDB, PGlite in a temp dir) with
 * the state rollups on (the default) against off, in the same run. Not a test.
 *
 *   npx node bench/rollups.bench.ts
 *   BENCH_ROUNDS=5 BENCH_UPLINKS=500000 BENCH_DEVICES=10000 npx node bench/rollups.bench.ts
 *   CLICKHOUSE_URL=http://127.0.0.1:18123 npx node bench/rollups.bench.ts   the states on that server
 *
 * Each round runs one service with rollups off and one with them on, each in a process of its own
 * (one chDB per process), in alternating order (off first in even rounds): uplinks of 4 states
 * round BENCH_DEVICES devices appended as fast as the log takes them, timed until the engine has
 * stored them all, after a warm-up that sees every device once. Reported: the medians of data
 * points/s and of CPU time per data point (the process's, chDB's threads and the rollup refresh
 * included), their ratios on/off (target ≥ 0.9), and, with rollups on, how long after the last
 * state was stored the rollups held every state (the lag after a burst) and the rate counted
 * until then. A refresh leaves the minute appends keep touching for later (rollupRefresh.ts), so
 * a run shorter than a few minutes pays for part of its refreshes after its last state.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { createService } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';
import { useStartFlags } from '../test/support/startFlags.ts';
import { ingest } from './support/embeddedIngest.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 500_000);
const DEVICES = env('BENCH_DEVICES', 10_000);
const ROUNDS = env('BENCH_ROUNDS', 3);
const ASSETS = ['a0', 'a1', 'a2', 'a3'];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Run {
  rate: number;
  cpu: number;
  /** ms from the last state stored to the rollups holding every state; undefined with rollups off. */
  lagMs?: number;
  /** Data points/s from the first append to the rollups holding every state. */
  throughRollups?: number;
  /** CPU time per data point (µs) until the rollups held every state. */
  cpuThroughRollups?: number;
}

/** One service, one ground of DEVICES devices: a warm-up, then the timed ingest. */
async function child(rollups: 'on' | 'off'): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rollups-bench-'));
  const url = process.env.CLICKHOUSE_URL;
  const database = `fleetstream_rollups_bench_${process.pid}`;
  const service = await createService({
    config: {
      ...defaultConfig,
      dataDir: dir,
      stateRollups: rollups,
      ...(url ? { clickhouseUrl: url, clickhouseDatabase: database } : {}),
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      mqtt: { ...defaultConfig.mqtt, port: -1 },
      metrics: { host: '127.0.0.1', port: 0 },
    },
    logger: silentLogger,
  });
  try {
    const user = await service.registry.createUser({ name: 'bench' });
    const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
    const devices: string[] = [];
    for (let d = 0; d < DEVICES; d++) {
      const created = await service.registry.createDevice({ groundId: ground.id, name: `d${d}`, assets: ASSETS.map((name) => ({ name, is: 'sensor', profile: { type: 'number' } })) });
      devices.push(created.device.id);
    }
    await ingest(service, devices, ASSETS, DEVICES, 0);
    const points = UPLINKS * ASSETS.length;
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    await ingest(service, devices, ASSETS, UPLINKS, 1_000_000);
    const stored = performance.now();
    const cpu = process.cpuUsage(cpu0);
    const run: Run = { rate: points / ((stored - started) / 1000), cpu: (cpu.user + cpu.system) / points };
    if (rollups === 'on') {
      const db = url ? database : 'fleetstream';
      const expected = (DEVICES + UPLINKS) * ASSETS.length;
      for (;;) {
        const [r] = await service.store.query(`SELECT sum(states) AS s FROM ${db}.states_day FINAL`);
        if (Number(r.s) === expected) break;
        await sleep(20);
      }
      run.lagMs = performance.now() - stored;
      run.throughRollups = points / ((performance.now() - started) / 1000);
      const all = process.cpuUsage(cpu0);
      run.cpuThroughRollups = (all.user + all.system) / points;
    }
    return run;
  } finally {
    await service.stop();
    if (url) await fetch(`${url}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, { method: 'POST' });
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  useStartFlags();
  const mode = process.env.BENCH_ROLLUPS_CHILD;
  if (mode === 'on' || mode === 'off') {
    console.log(JSON.stringify(await child(mode)));
    return;
  }
  const runs: Record<'on' | 'off', Run[]> = { on: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const m of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv, process.argv[1]], {
        env: { ...process.env, BENCH_ROLLUPS_CHILD: m },
        maxBuffer: 1 << 20,
      });
      const run = JSON.parse(stdout.trim().split('\n').at(-1)!) as Run;
      runs[m].push(run);
      const lag = run.lagMs === undefined ? '' : `, rollups caught up ${fmt(run.lagMs)} ms after the last state (${run.cpuThroughRollups!.toFixed(2)} µs CPU per data point until then)`;
      console.log(`round ${round + 1}, rollups ${m.padEnd(3)}: ${fmt(run.rate)} data points/s, ${run.cpu.toFixed(2)} µs CPU per data point${lag}`);
    }
  }
  const rate = (m: 'on' | 'off') => median(runs[m].map((r) => r.rate));
  const cpu = (m: 'on' | 'off') => median(runs[m].map((r) => r.cpu));
  console.log(`store: ${process.env.CLICKHOUSE_URL ? `ClickHouse server ${process.env.CLICKHOUSE_URL}` : 'chDB'}; ${fmt(UPLINKS * ASSETS.length)} data points per run, ${DEVICES} devices`);
  console.log(`rollups off: ${fmt(rate('off'))} data points/s, ${cpu('off').toFixed(2)} µs CPU per data point (medians of ${ROUNDS})`);
  console.log(`rollups on:  ${fmt(rate('on'))} data points/s, ${cpu('on').toFixed(2)} µs CPU per data point; caught up after ${runs.on.map((r) => fmt(r.lagMs!)).join(', ')} ms`);
  console.log(`ratio on/off: ${(rate('on') / rate('off')).toFixed(2)} × by throughput, ${(cpu('off') / cpu('on')).toFixed(2)} × by CPU per data point (target ≥ 0.9)`);
  const through = median(runs.on.map((r) => r.throughRollups!));
  const cpuThrough = median(runs.on.map((r) => r.cpuThroughRollups!));
  console.log(`rollups on, counted until the rollups held every state: ${fmt(through)} data points/s, ${cpuThrough.toFixed(2)} µs CPU per data point;`
    + ` ${(through / rate('off')).toFixed(2)} × by throughput, ${(cpu('off') / cpuThrough).toFixed(2)} × by CPU against rollups off until stored`);
}

await main();
