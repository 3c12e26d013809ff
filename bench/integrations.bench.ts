/**
 * Integrations on the embedded service (app/createService.ts: local log, chDB, PGlite in a temp
 * dir), with a local receiver in a process of its own (bench/support/countingReceiver.ts). Not a test.
 *
 *   npx node bench/integrations.bench.ts
 *   BENCH_UPLINKS=50000 BENCH_INTEGRATIONS=10 BENCH_OUTAGE_S=300 npx node bench/integrations.bench.ts
 *
 * 1. Ingestion: uplinks of 4 states (as an edge admits them: with their decision) appended to
 *    topic `uplinks` as fast as the log takes them, timed until the engine has stored every state
 *    (and written its events); with no integration, with topic `events` written for nobody
 *    (EVENTS_TOPIC=on: its cost alone), and with BENCH_INTEGRATIONS (10) that each take every
 *    state, in the same run. Reported: data points/s and the ratios (target ≥ 0.9), and the CPU
 *    the service's process used per data point meanwhile (all its threads: a figure the machine's
 *    noise moves less than the rates), with the receiver's CPU beside it.
 * 1c. The same through the device edge, as a fleet ingests (BENCH_HTTP_UPLINKS per round, default
 *    20,000; 0: skipped): two services in processes of their own, none and BENCH_INTEGRATIONS, sent
 *    uplinks over HTTP in BENCH_HTTP_ROUNDS (6) alternating rounds each; uplinks/s (the medians),
 *    the ratio (the median of adjacent rounds' ratios, and the ratio of the medians), and CPU per
 *    uplink. BENCH_HTTP_CONTROL=1: the second service has no integration either (the method's noise).
 * 2. Delivered: states/s the receiver got, all integrations together, from the first append until
 *    it has every one.
 * 3. Latency at low load, one integration: 20 uplinks a second for 10 s; from an uplink's receipt
 *    to its state at the receiver, p50 and p99 (target p50 ≤ 200 ms).
 * 4. Drain: the receiver answers 503 for BENCH_OUTAGE_S (default 60; the issue's figure is 300; 0: skipped)
 *    while 100 uplinks a second come in; then it is back: when the first delivery came, and the
 *    states/s delivered until the backlog was drained.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createService, type Service } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';
import { Topics } from '../schemas/messages.ts';
import { useStartFlags } from '../test/support/startFlags.ts';
import { ingest as ingestUplinks, uplinkRecord } from './support/embeddedIngest.ts';
import { cpuSeconds } from './support/procCpu.ts';
import { createDevicesOverHttp, freePort, startFleet, UplinkLoad, type FleetProcess, type TestDevice } from '../test/support/fleetCluster.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 50_000);
const INTEGRATIONS = env('BENCH_INTEGRATIONS', 10);
const DEVICES = env('BENCH_DEVICES', 1000);
const OUTAGE_S = env('BENCH_OUTAGE_S', 60);
const HTTP_UPLINKS = env('BENCH_HTTP_UPLINKS', 20_000);
const HTTP_ROUNDS = env('BENCH_HTTP_ROUNDS', 6);
/** 1: the second service of 1c has no integration either, so its pairs show the method's own noise. */
const HTTP_CONTROL = env('BENCH_HTTP_CONTROL', 0) === 1;
const HOST = '127.0.0.2';
const ASSETS = ['a0', 'a1', 'a2', 'a3'];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpuOf = (pid: number) => cpuSeconds(pid) * 1000;
/** CPU ms of this process and of the receiver between now and `done()`. */
const cpuSpan = (receiver: Receiver) => {
  const at = [cpuOf(process.pid), cpuOf(receiver.child.pid!)];
  return () => [cpuOf(process.pid) - at[0], cpuOf(receiver.child.pid!) - at[1]];
};

interface Receiver { url: string; child: ChildProcess; events: number; send(command: string): void; latency(): Promise<[number, number, number]> }

async function startReceiver(): Promise<Receiver> {
  const child = spawn(process.execPath, [new URL('./support/countingReceiver.ts', import.meta.url).pathname, HOST], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  let latencyWaiter: ((v: [number, number, number]) => void) | undefined;
  const receiver = await new Promise<Receiver>((resolve) => {
    const r: Receiver = {
      url: '', child, events: 0,
      send: (command) => child.stdin!.write(`${command}\n`),
      latency: () => new Promise((res) => { latencyWaiter = res; r.send('latency'); }),
    };
    lines.on('line', (line) => {
      const [kind, a, b, c] = line.split(' ');
      if (kind === 'listening') resolve(Object.assign(r, { url: `http://${HOST}:${a}/hook` }));
      else if (kind === 'count') r.events = Number(a);
      else if (kind === 'latency') latencyWaiter?.([Number(a), Number(b), Number(c)]);
    });
  });
  return receiver;
}

async function startService(dir: string, eventsTopic: 'auto' | 'on' = 'auto'): Promise<{ service: Service; groundId: string; devices: string[] }> {
  const service = await createService({
    config: {
      ...defaultConfig, dataDir: dir, eventsTopic,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 }, mqtt: { ...defaultConfig.mqtt, port: -1 }, metrics: { host: '127.0.0.1', port: 0 },
      integrationsAllowHosts: [HOST],
    },
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

const uplink = (deviceId: string, k: number, receivedAt: number) => uplinkRecord(deviceId, ASSETS, k, receivedAt);
const ingest = (service: Service, devices: string[], count: number, from = 0) => ingestUplinks(service, devices, ASSETS, count, from);

async function integration(service: Service, groundId: string, url: string) {
  return (await service.registry.createIntegration({ groundId, name: 'bench', kind: 'webhook', url, events: ['state'] })).integration;
}

async function waitEvents(receiver: Receiver, events: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (receiver.events < events) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

async function main(): Promise<void> {
  useStartFlags();
  const receiver = await startReceiver();
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-integrations-bench-'));
    dirs.push(dir);
    return dir;
  };
  try {
    // 1. No integration.
    const none = await startService(fresh());
    await ingest(none.service, none.devices, 2000); // warm-up
    let started = performance.now();
    let cpu = cpuSpan(receiver);
    await ingest(none.service, none.devices, UPLINKS, 2000);
    const noneRate = (UPLINKS * 4) / ((performance.now() - started) / 1000);
    const noneCpu = cpu();
    await none.service.stop();

    // 1b. Topic events written, read by nobody: what writing it costs.
    const topicOnly = await startService(fresh(), 'on');
    await ingest(topicOnly.service, topicOnly.devices, 2000);
    started = performance.now();
    cpu = cpuSpan(receiver);
    await ingest(topicOnly.service, topicOnly.devices, UPLINKS, 2000);
    const topicRate = (UPLINKS * 4) / ((performance.now() - started) / 1000);
    const topicCpu = cpu();
    await topicOnly.service.stop();

    // 1–2. With INTEGRATIONS.
    const withThem = await startService(fresh());
    const { service, groundId, devices } = withThem;
    const made = [];
    for (let i = 0; i < INTEGRATIONS; i++) made.push(await integration(service, groundId, receiver.url));
    await ingest(service, devices, 2000);
    await waitEvents(receiver, INTEGRATIONS * 2000 * 4, 120_000);
    const before = receiver.events;
    started = performance.now();
    cpu = cpuSpan(receiver);
    await ingest(service, devices, UPLINKS, 2000);
    const withRate = (UPLINKS * 4) / ((performance.now() - started) / 1000);
    const withCpu = cpu();
    const all = await waitEvents(receiver, before + INTEGRATIONS * UPLINKS * 4, 600_000);
    const deliveredRate = (receiver.events - before) / ((performance.now() - started) / 1000);
    console.log(`ingestion, no integration:      ${fmt(noneRate)} data points/s`);
    console.log(`ingestion, topic events only:   ${fmt(topicRate)} data points/s  (${(topicRate / noneRate).toFixed(2)} × none: writing the topic)`);
    console.log(`ingestion, ${INTEGRATIONS} integrations:   ${fmt(withRate)} data points/s  (${(withRate / noneRate).toFixed(2)} × none; target ≥ 0.9)`);
    // The same work in CPU: the service's process (every thread, the appends included) per data point, and the receiver's meanwhile.
    const perPoint = ([own]: number[]) => (own * 1000) / (UPLINKS * 4);
    console.log(`CPU while ingesting:            service ${perPoint(noneCpu).toFixed(2)} / ${perPoint(topicCpu).toFixed(2)} / ${perPoint(withCpu).toFixed(2)} µs per data point `
      + `(none / topic / ${INTEGRATIONS} integrations: ${(perPoint(withCpu) / perPoint(noneCpu)).toFixed(2)} × none), receiver ${fmt(withCpu[1])} ms of the ${fmt(withCpu[0])} ms beside it`);
    console.log(`delivered to ${INTEGRATIONS} integrations:   ${fmt(deliveredRate)} states/s${all ? '' : ' (not all within 10 minutes)'}`);

    // 1c. Through the device edge.
    if (HTTP_UPLINKS > 0) await throughTheEdge(receiver, fresh());

    // 3. Latency at low load, one integration.
    for (const extra of made.slice(1)) await service.registry.deleteIntegration(extra.id);
    await receiver.latency();
    for (let i = 0; i < 200; i++) {
      await service.log.append(Topics.uplinks, [uplink(devices[i % devices.length], 10_000_000 + i, Date.now())]);
      await sleep(50);
    }
    await sleep(2000);
    const [p50, p99, n] = await receiver.latency();
    console.log(`latency at 20 uplinks/s:        p50 ${p50} ms, p99 ${p99} ms over ${n} states (target p50 ≤ 200 ms)`);

    // 4. Outage, then drain (BENCH_OUTAGE_S=0: none).
    if (OUTAGE_S > 0) await outageThenDrain(service, receiver, devices);
    await service.stop();
  } finally {
    receiver.child.kill();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * 1c. The comparison of 1 as a fleet ingests, through the device edge: two services of their own
 * (`fleetstream start` on its embedded defaults), one with no integration and one with
 * INTEGRATIONS, each sent HTTP_UPLINKS uplinks of 4 states (PUT /device/{id}/state from this
 * process, keep-alive, 64 in flight over 64 devices) in rounds that alternate, after one unmeasured
 * round each. A round of the second ends once the receiver has all its states, so that what it
 * delivers after its uplinks never weighs on the other's next round. Reported per service: uplinks
 * answered 202 per second (medians of the rounds), and its process's CPU per uplink while they
 * came in and, for the second, until they were delivered too. The rounds go in pairs, none then
 * with or with then none by turns (ABBA): on a shared machine the rate drifts by a fifth or more
 * over tens of seconds, and two adjacent short rounds see nearly the same machine, so the ratio
 * is the median of the pairs' ratios; the ratio of the medians is printed beside it.
 */
async function throughTheEdge(receiver: Receiver, dir: string): Promise<void> {
  const start = async (name: string, integrations: number) => {
    const env = {
      KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATABASE_URL: '', DATA_DIR: join(dir, name), HTTP_HOST: '127.0.0.1', HTTP_PORT: String(await freePort()),
      MQTT_PORT: '-1', LPWAN_APPLICATIONS_FILE: '', INTEGRATIONS_ALLOW_HOSTS: HOST,
    };
    const fleet = await startFleet({ name, role: 'all', env });
    const baseUrl = `http://127.0.0.1:${fleet.httpPort}`;
    const { devices, userToken, groundId } = await createDevicesOverHttp(baseUrl, env, 64);
    for (let i = 0; i < integrations; i++) {
      const res = await fetch(`${baseUrl}/ground/${groundId}/integrations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `bench ${i}`, kind: 'webhook', url: receiver.url, events: ['state'] }),
      });
      if (res.status !== 201) throw new Error(`creating an integration: ${res.status} ${await res.text()}`);
    }
    return { fleet, baseUrl, devices, integrations };
  };
  type Edge = { fleet: FleetProcess; baseUrl: string; devices: TestDevice[]; integrations: number };
  const edges: Edge[] = [];
  let k = 0;
  const round = async (edge: Edge) => {
    const before = receiver.events;
    const cpu0 = cpuSeconds(edge.fleet.pid);
    const t0 = performance.now();
    const load = new UplinkLoad({ baseUrl: edge.baseUrl, devices: edge.devices, concurrency: 64, total: HTTP_UPLINKS, firstK: (k += HTTP_UPLINKS) }).start();
    await load.finished();
    const seconds = (performance.now() - t0) / 1000;
    const ingestCpu = cpuSeconds(edge.fleet.pid) - cpu0;
    const whileIngesting = receiver.events - before;
    if (load.acked.size !== HTTP_UPLINKS) throw new Error(`${edge.fleet.name}: ${load.acked.size} of ${HTTP_UPLINKS} accepted (${JSON.stringify(Object.fromEntries(load.statuses))})`);
    let delivered = true;
    if (edge.integrations > 0) delivered = await waitEvents(receiver, before + edge.integrations * HTTP_UPLINKS * 4, 600_000);
    else await sleep(1000);
    return { perSecond: HTTP_UPLINKS / seconds, whileIngesting, ingestMicros: (ingestCpu * 1e6) / HTTP_UPLINKS, allMicros: ((cpuSeconds(edge.fleet.pid) - cpu0) * 1e6) / HTTP_UPLINKS, delivered };
  };
  try {
    edges.push(await start('edge-none', 0), await start('edge-with', HTTP_CONTROL ? 0 : INTEGRATIONS));
    for (const edge of edges) await round(edge);
    const rounds: Array<Awaited<ReturnType<typeof round>>>[] = [[], []];
    for (let i = 0; i < HTTP_ROUNDS; i++) for (const e of i % 2 === 0 ? [0, 1] : [1, 0]) rounds[e].push(await round(edges[e]));
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2;
    };
    const [none, withThem] = rounds.map((r) => ({ rate: median(r.map((x) => x.perSecond)), ingest: median(r.map((x) => x.ingestMicros)), all: median(r.map((x) => x.allMicros)) }));
    const pairRatios = rounds[1].map((r, i) => r.perSecond / rounds[0][i].perSecond);
    const pairs = pairRatios.map((r) => r.toFixed(2)).join(' ');
    console.log(`through the HTTP edge, none:    ${fmt(none.rate)} uplinks/s (${fmt(none.rate * 4)} data points/s), ${none.ingest.toFixed(0)} µs CPU per uplink`);
    console.log(`through the HTTP edge, ${HTTP_CONTROL ? 'none again (control)' : `${INTEGRATIONS} integrations`}: ${fmt(withThem.rate)} uplinks/s (${median(pairRatios).toFixed(2)} × none, the median of the pairs: ${pairs}; ${(withThem.rate / none.rate).toFixed(2)}, the ratio of the medians; target ≥ 0.9), `
      + `${withThem.ingest.toFixed(0)} µs CPU per uplink while they came in, ${withThem.all.toFixed(0)} until delivered${rounds[1].every((r) => r.delivered) ? '' : ' (not all delivered within 10 minutes)'}; `
      + `delivered while they came in: ${rounds[1].map((r) => `${((100 * r.whileIngesting) / (INTEGRATIONS * HTTP_UPLINKS * 4)).toFixed(1)} %`).join(' ')} of their states`);
  } finally {
    await Promise.all(edges.map((e) => e.fleet.stop()));
  }
}

async function outageThenDrain(service: Service, receiver: Receiver, devices: string[]): Promise<void> {
  receiver.send('fail');
  const outageStart = receiver.events;
  const until = Date.now() + OUTAGE_S * 1000;
  let k = 20_000_000;
  while (Date.now() < until) {
    const now = Date.now();
    await service.log.append(Topics.uplinks, Array.from({ length: 10 }, () => uplink(devices[k % devices.length], k++, now)));
    await sleep(100);
  }
  const backlog = (k - 20_000_000) * 4;
  receiver.send('ok');
  const back = performance.now();
  while (receiver.events === outageStart) await sleep(20);
  const first = performance.now();
  const drained = await waitEvents(receiver, outageStart + backlog, 900_000);
  const drainS = (performance.now() - first) / 1000;
  console.log(`after a ${OUTAGE_S} s outage:          first delivery ${((first - back) / 1000).toFixed(1)} s after the receiver was back (the retry schedule), `
    + `then ${fmt(backlog / Math.max(drainS, 0.001))} states/s until the ${fmt(backlog)} waiting were delivered${drained ? '' : ' (not drained within 15 minutes)'}`);
}

await main();
