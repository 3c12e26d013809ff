/**
 * Rules on the embedded service (app/createService.ts: local log, chDB, PGlite in a temp dir). Not
 * a test.
 *
 *   npx node bench/rules.bench.ts
 *   BENCH_DEVICES=10000 BENCH_RULES=1000 BENCH_UPLINKS=50000 npx node bench/rules.bench.ts
 *
 * 1. Throughput: uplinks of 4 states (as an edge admits them) appended as fast as the log takes
 *    them, round BENCH_DEVICES devices of one ground, timed until the engine has stored them all;
 *    with no rule, then with BENCH_RULES rules over those devices (each on one asset of its own
 *    10 devices; a threshold that 1 state in 1000 crosses, so alarms are raised and cleared as the
 *    run goes), in the same run. Reported: data points/s and the ratio (target ≥ 0.9).
 * 2. Latency at low load: one device, one rule (`above 50`), 20 uplinks a second alternating 100
 *    and 0 (each 100 raises an alarm, each 0 clears it): from the append to the alarm in the
 *    registry, p50 and p99; and, as the baseline, from the append to the state in the store
 *    (target: the alarm at most 50 ms after the state, at the p50).
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

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 50_000);
const DEVICES = env('BENCH_DEVICES', 10_000);
const RULES = env('BENCH_RULES', 1000);
const ASSETS = ['a0', 'a1', 'a2', 'a3'];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Above 900 for 1 uplink in 1000, every other time its device comes round: alarms raised and cleared as the run goes. */
const value = (_asset: string, k: number) => (k % 1000 === 999 && Math.floor(k / DEVICES) % 2 === 0 ? 1000 : k % 900);

async function startService(dir: string): Promise<{ service: Service; groundId: string; devices: string[] }> {
  const service = await createService({
    config: { ...defaultConfig, dataDir: dir, http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 }, mqtt: { ...defaultConfig.mqtt, port: -1 }, metrics: { host: '127.0.0.1', port: 0 } },
    logger: silentLogger,
  });
  const user = await service.registry.createUser({ name: 'bench' });
  const ground = await service.registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: string[] = [];
  for (let d = 0; d < DEVICES; d++) {
    const created = await service.registry.createDevice({ groundId: ground.id, name: `d${d}`, assets: ASSETS.map((name) => ({ name, is: 'sensor', profile: { type: 'number' } })) });
    devices.push(created.device.id);
  }
  return { service, groundId: ground.id, devices };
}

async function rate(service: Service, devices: string[]): Promise<number> {
  await ingest(service, devices, ASSETS, Math.min(DEVICES, 20_000), 0, value); // warm-up: every device seen once
  const started = performance.now();
  await ingest(service, devices, ASSETS, UPLINKS, 1_000_000, value);
  return (UPLINKS * ASSETS.length) / ((performance.now() - started) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function main(): Promise<void> {
  useStartFlags();
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rules-bench-'));
    dirs.push(dir);
    return dir;
  };
  try {
    const none = await startService(fresh());
    const noneRate = await rate(none.service, none.devices);
    await none.service.stop();

    const withRules = await startService(fresh());
    const { service, groundId, devices } = withRules;
    for (let r = 0; r < RULES; r++) {
      const mine = Array.from({ length: 10 }, (_, i) => devices[(r * 10 + i) % devices.length]);
      await service.registry.createRule({ groundId, name: `r${r}`, asset: ASSETS[r % ASSETS.length], devices: [...new Set(mine)], condition: { above: 900 }, severity: 'minor' });
    }
    const rulesRate = await rate(service, devices);
    const alarms = (await service.registry.listAlarms(groundId, { limit: 1001 })).length;
    console.log(`no rule:                 ${fmt(noneRate)} data points/s`);
    console.log(`${RULES} rules over ${DEVICES} devices: ${fmt(rulesRate)} data points/s  (${(rulesRate / noneRate).toFixed(2)} × no rule; target ≥ 0.9; ${alarms >= 1001 ? 'over 1000' : alarms} alarms raised)`);

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
}

await main();
