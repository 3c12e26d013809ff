/**
 * MQTT ingest and command delivery on loopback, Fleetstream against Mosquitto measured in the same
 * run. Not part of the test suite.
 *
 *   npx node bench/mqtt.bench.ts [messages=60000] [clients=100,1000] [commands=200] [limitSeconds=60] [externalConnections|-]
 *     [versions=4,5] [external=on|off] [rssConnections=10000] [qos=0,1]
 *
 * Before the first configuration of each client count is timed, it runs once unmeasured (as many
 * messages per QoS as a measured scenario, both brokers), so the edge runs as a service that has
 * been running: its code compiled (with 5000 messages the first measured scenario still paid for
 * V8's optimising compiler, twice the helper-thread CPU per message of the later ones) and its
 * connected devices read from the registry. Without it the first 1,000-client scenario timed the
 * first uplink of 900 newly connected devices, each waiting for its device's registry read (a
 * PGlite query, ~0.5 ms of the edge's thread): 32 µs per message instead of 7-10, 0.36× Mosquitto.
 * A scenario takes `messages` long enough to be measured in a steady state: with 20000 one QoS 1
 * scenario lasted ~0.4 s, and the edge's helper threads were still collecting and compiling for the
 * scenarios before it (the first external-mode one above all): the first QoS 1 scenario of 100
 * clients had 5.9-9.7 µs per message of other threads' CPU and 0.84-1.01× Mosquitto in three runs,
 * against 2.1-2.5 µs and 1.03-1.21× with 60000, alone or after the same scenarios.
 * Ingest, for each client count, MQTT version (4 = 3.1.1, 5) and QoS (`qos`, default 0 and 1):
 * `clients` MQTT connections of that version (to Mosquitto and to the edge alike) publish `messages`
 * asset states in all (`{value}` on `device/<id>/asset/t/state`, one device per connection); at
 * QoS 1 each connection waits for its PUBACK before the next publish (one in flight per client).
 *   - Mosquitto (127.0.0.1:1883, the baseline broker): publish → receipt by a subscriber (four
 *     connections in one shared subscription, at the scenario's QoS).
 *   - Fleetstream embedded edge (device-token auth, ACL, payload check): publish → durably
 *     appended to topic `uplinks` in the local log; at QoS 1 that is the PUBACK the client receives.
 *   - Fleetstream external broker mode: devices publish to Mosquitto, Fleetstream's shared
 *     subscriptions take the messages, publish → durably appended (the device's PUBACK comes from
 *     Mosquitto, so the clock stops when the append count is reached). `lost` = published (and at
 *     QoS 1 acknowledged by Mosquitto) but never appended: the broker dropped them. The ratio is
 *     against Mosquitto alone (publish → receipt) in the same run.
 * Beside each rate, CPU time per message over the scenario: the broker (Mosquitto's process, from
 * /proc when readable; for Fleetstream the thread that runs edge, log and engine), the load
 * generator's thread, and the process's other threads (V8's garbage collection and compilers for
 * both isolates, libuv's pool: the edge's journal writes). Figures far less noisy than the rates
 * on a busy machine, and they show where each side spends.
 * msg/s = messages arrived / (time from the first publish to the last receipt or append); QoS 1
 * latencies are per message (p50/p99). Each scenario stops at `limitSeconds`; what did not arrive
 * (dropped by a broker, or still on its way) is reported.
 *
 * Command delivery latency, one command at a time, `commands` times:
 *   - Mosquitto: a client publishes `{value, at}` at QoS 1 → a subscribed client receives it.
 *   - Fleetstream: a command record is appended to topic `commands` → CommandPipeline → command
 *     actor → edge PUBLISH → the device's subscribed client receives it (the request reaches the
 *     engine thread by postMessage, a few µs of the figure).
 *
 *   - Fleetstream edge alone: CommandTransport.deliver (what a command actor calls) → the device's
 *     subscribed client receives it.
 *
 * Memory per connected device: `rssConnections` raw MQTT 3.1.1 connections (a child process holds
 * the client sockets) each CONNECT with a device token and SUBSCRIBE to its command topic; the
 * figure is the growth of this process's RSS (the edge runs here) and of a Mosquitto started for it
 * on port 18839 (VmRSS in /proc; the system one on 1883 when that cannot start) with the same
 * connections, scaled to 10 000: its peak while they connect, and what is held once all are answered.
 * It runs before the ingest scenarios, and both threads collect their garbage fully before the first
 * reading and before the last: measured after the scenarios, the connections fitted in heap those had
 * freed (1-2 MB per 10 000 printed), and the system Mosquitto holds memory from its earlier clients
 * (0 MB growth, against 31 MB for a fresh one).
 *
 * Fleetstream (edge, log, engine) runs in a worker thread; every MQTT client runs in the main thread
 * for both brokers, so the load generator's cost is the same on both sides.
 * The process runs with the service's start flags (package.json's start script), set before the worker starts.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { createExternalMqtt, type ExternalMqtt } from '../adapters/mqtt/createExternalMqtt.ts';
import { createMqttEdge } from '../adapters/mqtt/createMqttEdge.ts';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { CommandActors } from '../engine/commands/CommandActors.ts';
import { CommandPipeline } from '../engine/commands/CommandPipeline.ts';
import { commandDirectory } from '../app/buildCommands.ts';
import { registryCacheTtlMs } from '../app/buildEdges.ts';
import { InProcessRegistryChanges } from '../adapters/registry-changes/InProcessRegistryChanges.ts';
import { newId } from '../engine/kernel/ids.ts';
import { buildIntake } from '../app/buildIntake.ts';
import { Topics } from '../schemas/messages.ts';
import { useStartFlags } from '../test/support/startFlags.ts';

const MOSQUITTO = 'mqtt://127.0.0.1:1883';
/** A Mosquitto of its own for the memory figure: the system one holds memory from earlier clients. */
const FRESH_MOSQUITTO_PORT = 18839;

/** A full garbage collection of this thread's heap. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

interface Device { id: string; token: string; ledId: string }
type ToWorker = { type: 'collect' } | { type: 'count' } | { type: 'command'; deviceId: string; value: number } | { type: 'deliver'; device: Device; value: number } | { type: 'external'; on: boolean; connections?: number } | { type: 'stop' };
type FromWorker = { type: 'ready'; port: number; devices: Device[] } | { type: 'collected' } | { type: 'count'; appended: number; cpuMicros: number } | { type: 'external'; brokerDropped: number } | { type: 'stopped' };

// ---------------------------------------------------------------- Fleetstream (worker thread)

async function engineThread(deviceCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-mqtt-bench-'));
  const registry = await createPgliteRegistry();
  const user = await registry.createUser({ name: 'bench' });
  const ground = await registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Device[] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await registry.createDevice({
      groundId: ground.id, name: `bench-${i}`,
      assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'number' } }],
    });
    devices.push({ id: device.id, token, ledId: device.assets.find((a) => a.name === 'led')!.id });
  }
  const log = createLocalLog({ dir: join(dir, 'log') });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 8 }, { name: Topics.commands, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }]);
  let appended = 0;
  const intake = buildIntake({
    clock: systemClock,
    rejections: { append: async () => undefined },
    log: { append: async (topic, records) => { const p = await log.append(topic, records); if (topic === Topics.uplinks) appended += records.length; return p; } },
  });
  const { admission } = intake;
  // Registry answers cached as the embedded service caches them (app/buildEdges.ts), kept current by registry changes.
  const changes = new InProcessRegistryChanges();
  const cacheTtlMs = registryCacheTtlMs({});
  const edge = await createMqttEdge({ registry, changes, cacheTtlMs, admission, clock: systemClock, port: 0, host: '127.0.0.1' });
  const actors = new CommandActors({ clock: systemClock, transport: edge.commands });
  // Devices looked up per command as the service does (app/buildCommands.ts): cached, kept current by registry changes.
  const { directory } = commandDirectory({ registry, changes, clock: systemClock, cacheTtlMs });
  const commands = new CommandPipeline({ log, actors, directory, clock: systemClock, commitIntervalMs: 50 });
  await commands.start();
  let external: ExternalMqtt | undefined;
  const post = (m: FromWorker) => parentPort!.postMessage(m);
  parentPort!.on('message', async (m: ToWorker) => {
    if (m.type === 'collect') {
      collect();
      post({ type: 'collected' });
    } else if (m.type === 'count') {
      const cpu = process.threadCpuUsage();
      post({ type: 'count', appended, cpuMicros: cpu.user + cpu.system });
    }
    else if (m.type === 'command') {
      const record = { id: newId(), deviceId: m.deviceId, asset: 'led', value: m.value, issuer: 'app:bench', issuedAt: Date.now() };
      await log.append(Topics.commands, [{ key: m.deviceId, value: new TextEncoder().encode(JSON.stringify(record)) }]);
    } else if (m.type === 'deliver') {
      // The edge alone: CommandTransport.deliver as a command actor calls it.
      const payload = new TextEncoder().encode(JSON.stringify({ value: m.value, at: new Date().toISOString() }));
      void edge.commands.deliver({ commandId: newId(), deviceId: m.device.id, asset: { id: m.device.ledId, name: 'led' }, payload });
    } else if (m.type === 'external') {
      if (m.on) external = await createExternalMqtt({ url: MOSQUITTO, registry, changes, cacheTtlMs, admission, clock: systemClock, shareGroup: `fsbench-${process.pid}`, connections: m.connections });
      else await external?.close();
      post({ type: 'external', brokerDropped: external?.stats.brokerDropped ?? 0 });
    } else {
      await commands.stop();
      actors.stop();
      await edge.close();
      await intake.close();
      await log.close();
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
      post({ type: 'stopped' });
    }
  });
  post({ type: 'ready', port: edge.port, devices });
}

// ---------------------------------------------------------------- load generator (main thread)

interface Outcome { rate: number; received: number; total: number; p50?: number; p99?: number }

/** CPU µs used so far by the whole process, by this (the load generator's) thread, and by Mosquitto's process (when readable). */
function cpuNow(mosquittoPid: number | undefined): { process: number; main: number; mosquitto: number } {
  const all = process.cpuUsage();
  const main = process.threadCpuUsage();
  let mosquitto = Number.NaN;
  if (mosquittoPid !== undefined) {
    try {
      // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 per second).
      const fields = readFileSync(`/proc/${mosquittoPid}/stat`, 'utf8').split(') ')[1].split(' ');
      mosquitto = (Number(fields[11]) + Number(fields[12])) * 10_000;
    } catch { /* gone */ }
  }
  return { process: all.user + all.system, main: main.user + main.system, mosquitto };
}

/** CPU µs per message between two readings: the broker's, the load generator's thread, the process's other threads. */
function cpuLine(broker: number, before: ReturnType<typeof cpuNow>, after: ReturnType<typeof cpuNow>, messages: number, edgeThread?: number): string {
  const main = after.main - before.main;
  const others = after.process - before.process - main - (edgeThread ?? 0);
  const per = (micros: number) => (micros / messages).toFixed(1).padStart(5);
  return `CPU µs per message: broker ${per(broker)}, load generator ${per(main)}, other threads ${per(others)}`;
}

const percentile = (sorted: number[], q: number) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]);

async function connectAll(url: string, count: number, auth: (i: number) => string | undefined, protocolVersion: 4 | 5 = 4): Promise<MqttClient[]> {
  const clients: MqttClient[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, k) => {
      const token = auth(i + k);
      return mqtt.connectAsync(url, { username: token, password: token, reconnectPeriod: 0, connectTimeout: 20_000, keepalive: 120, protocolVersion }, false);
    }));
    clients.push(...batch);
  }
  return clients;
}

/**
 * Publishes `total` messages over `clients`; `done()` tells how many arrived (receipts or appends);
 * at QoS 1 with `ackLatency` the PUBACK time is the per-message latency.
 */
async function drive(clients: MqttClient[], topicOf: (i: number) => string, total: number, qos: 0 | 1, limitMs: number,
  arrived: () => number | Promise<number>, latencies: number[], ackLatency: boolean): Promise<Outcome> {
  const perClient = Math.ceil(total / clients.length);
  const started = performance.now();
  const deadline = started + limitMs;
  let sent = 0;
  const publishers = clients.map(async (client, i) => {
    const topic = topicOf(i);
    for (let k = 0; k < perClient && sent < total && performance.now() < deadline; k++) {
      sent++;
      const t = performance.now();
      const payload = Buffer.from(`{"value":${t}}`);
      if (qos === 0) client.publish(topic, payload, { qos: 0 });
      else {
        await client.publishAsync(topic, payload, { qos: 1 });
        if (ackLatency) latencies.push(performance.now() - t);
      }
    }
  });
  // Arrivals are polled every 5 ms while publishing and after; the clock stops at the last one.
  let count = 0;
  let last = started;
  let publishing = true;
  const poll = async () => {
    const now = await arrived();
    if (now !== count) {
      count = now;
      last = performance.now();
    }
  };
  const polling = (async () => {
    while (publishing) {
      await poll();
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await Promise.all(publishers);
  publishing = false;
  await polling;
  await poll();
  while (count < sent && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
    await poll();
  }
  const seconds = (last - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: count / seconds, received: count, total: sent, p50: latencies.length ? percentile(latencies, 0.5) : undefined, p99: latencies.length ? percentile(latencies, 0.99) : undefined };
}

/** Mosquitto's pid when this machine runs one whose /proc entry is readable. */
function mosquittoProcess(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'mosquitto') return Number(entry);
    } catch { /* gone, or not ours to read */ }
  }
  return undefined;
}

function vmRss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) * 1024;
}

/**
 * Growth of `rss()` while `count` raw MQTT 3.1.1 connections (held by a child process) CONNECT
 * and SUBSCRIBE to a command topic: its peak until all are answered, and what is held once they are
 * (after `collect()`, which for the edge collects both threads' garbage first, as before the start).
 */
async function rssOf(port: number, count: number, device: (i: number) => Device | undefined, rss: () => number,
  settle: () => Promise<void> = async () => undefined): Promise<{ peak: number; held: number }> {
  await settle();
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rss()); }, 20);
  const script = `
    const net = require('node:net');
    const [port, count, devices] = JSON.parse(process.argv[1]);
    const str = (s) => { const b = Buffer.from(s); return Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]); };
    const packet = (first, body) => { const len = []; let n = body.length; do { let x = n % 128; n = Math.floor(n / 128); if (n) x |= 128; len.push(x); } while (n); return Buffer.concat([Buffer.from([first, ...len]), body]); };
    let ready = 0;
    const sockets = [];
    const one = (i) => new Promise((resolve) => {
      const d = devices.length ? devices[i % devices.length] : undefined;
      const s = net.connect(port, '127.0.0.1');
      sockets.push(s);
      let got = 0;
      s.on('data', (b) => { got += b.length; if (got >= 9) { ready++; resolve(); } });
      s.on('error', () => resolve());
      s.on('close', () => resolve());
      s.on('connect', () => {
        const flags = d ? 0x82 : 0x02;
        const connect = Buffer.concat([str('MQTT'), Buffer.from([4, flags, 0, 0]), str('rss-' + i), ...(d ? [str(d.token)] : [])]);
        const topic = 'device/' + (d ? d.id : 'x' + i) + '/asset/+/command';
        s.write(Buffer.concat([packet(0x10, connect), packet(0x82, Buffer.concat([Buffer.from([0, 1]), str(topic), Buffer.from([1])]))]));
      });
    });
    (async () => {
      for (let i = 0; i < count; i += 250) await Promise.all(Array.from({ length: Math.min(250, count - i) }, (_, k) => one(i + k)));
      process.stdout.write(JSON.stringify({ ready }) + '\\n');
      process.stdin.on('data', () => process.exit(0));
    })();`;
  const devices = Array.from({ length: Math.min(count, 1000) }, (_, i) => device(i)).filter((d) => d !== undefined);
  const child = spawn(process.execPath, ['-e', script, JSON.stringify([port, count, devices])], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(out); });
  });
  await new Promise((r) => setTimeout(r, 500));
  clearInterval(sampler);
  peak = Math.max(peak, rss());
  await settle();
  await new Promise((r) => setTimeout(r, 500));
  const held = rss() - before;
  const { ready } = JSON.parse(line) as { ready: number };
  child.stdin.write('x');
  await new Promise((r) => child.once('exit', r));
  if (ready < count) console.log(`  (${ready}/${count} connections answered)`);
  return { peak: peak - before, held };
}

/** A Mosquitto started for the memory figure on FRESH_MOSQUITTO_PORT, or undefined when it cannot start. */
async function freshMosquitto(): Promise<{ pid: number; stop(): void } | undefined> {
  const listening = () => new Promise<boolean>((resolve) => {
    const socket = connect(FRESH_MOSQUITTO_PORT, '127.0.0.1', () => { socket.destroy(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
  // Something else on the port (a broker left by an interrupted run) would be measured in its place.
  if (await listening()) return undefined;
  const broker = spawn('mosquitto', ['-p', String(FRESH_MOSQUITTO_PORT)], { stdio: 'ignore' });
  broker.on('error', () => undefined);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if (broker.exitCode !== null || broker.pid === undefined) return undefined;
    if (await listening()) return { pid: broker.pid, stop: () => broker.kill() };
  }
  broker.kill();
  return undefined;
}

async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 60_000);
  const clientCounts = (process.argv[3] ?? '100,1000').split(',').map(Number);
  const commandCount = Number(process.argv[4] ?? 200);
  const limitMs = Number(process.argv[5] ?? 60) * 1000;
  const externalConnections = process.argv[6] === undefined || process.argv[6] === '-' ? undefined : Number(process.argv[6]);
  const versions = (process.argv[7] ?? '4,5').split(',').map(Number) as (4 | 5)[];
  const withExternal = (process.argv[8] ?? 'on') !== 'off';
  const rssConnections = Number(process.argv[9] ?? 10_000);
  const qosLevels = (process.argv[10] ?? '0,1').split(',').map(Number) as (0 | 1)[];
  const maxClients = Math.max(...clientCounts);
  const run = `fsbench-${process.pid}-${newId().slice(0, 6)}`;

  // The service's start flags (the garbage collector's among them) for the edge's thread, as `npm start` runs it.
  useStartFlags();
  const worker = new Worker(new URL(import.meta.url), { workerData: maxClients });
  const waiting = new Map<string, (m: FromWorker) => void>();
  worker.on('message', (m: FromWorker) => { waiting.get(m.type)?.(m); waiting.delete(m.type); });
  const ask = <T extends FromWorker['type']>(type: T, message?: ToWorker) => new Promise<Extract<FromWorker, { type: T }>>((resolve) => {
    waiting.set(type, resolve as (m: FromWorker) => void);
    if (message) worker.postMessage(message);
  });
  console.log(`setting up ${maxClients} devices…`);
  const ready = await ask('ready');
  const edgeUrl = `mqtt://127.0.0.1:${ready.port}`;
  const appendedNow = async () => (await ask('count', { type: 'count' })).appended;

  /**
   * External mode: the devices publish to Mosquitto (at QoS 1 each has the broker's PUBACK), an
   * instance with `externalConnections` shared-subscription connections appends; what never
   * reaches the log is lost. The broker's own drop counter ($SYS, every 10 s) is read at the end.
   */
  const externalScenario = async (clients: MqttClient[], topicOf: (i: number) => string, count: number, qos: 0 | 1, limit: number) => {
    await ask('external', { type: 'external', on: true, connections: externalConnections });
    const before = await appendedNow();
    const outcome = await drive(clients, topicOf, count, qos, limit, async () => (await appendedNow()) - before, [], false);
    const { brokerDropped } = await ask('external', { type: 'external', on: false });
    return { ...outcome, brokerDropped };
  };

  const rows: string[] = [];
  const fmt = (o: Outcome) => `${o.rate.toFixed(0).padStart(7)} msg/s${o.received < o.total ? ` (${o.received}/${o.total} arrived)` : ''}`
    + (o.p50 !== undefined ? `  p50 ${o.p50.toFixed(2)} ms  p99 ${o.p99!.toFixed(2)} ms` : '');

  const mosquittoPid = mosquittoProcess();
  // Memory first, while the process holds nothing but its devices: after the scenarios the edge's
  // connections fit in heap they freed (V8 keeps its pages), 1-2 MB per 10 000 printed.
  if (rssConnections > 0) {
    const per10k = (bytes: number) => `${((bytes / rssConnections) * 10_000 / 1024 / 1024).toFixed(0)} MB per 10 000`;
    const settle = async () => {
      await ask('collected', { type: 'collect' });
      collect();
    };
    const edgeGrowth = await rssOf(ready.port, rssConnections, (i) => ready.devices[i % ready.devices.length], () => process.memoryUsage().rss, settle);
    rows.push(`${rssConnections} connected devices  fleetstream edge  RSS growth: peak ${per10k(edgeGrowth.peak)}, held ${per10k(edgeGrowth.held)}`);
    const fresh = await freshMosquitto();
    if (fresh !== undefined) {
      const growth = await rssOf(FRESH_MOSQUITTO_PORT, rssConnections, () => undefined, () => vmRss(fresh.pid));
      fresh.stop();
      rows.push(`${rssConnections} connected clients  mosquitto (fresh) RSS growth: peak ${per10k(growth.peak)}, held ${per10k(growth.held)}`);
    } else if (mosquittoPid !== undefined) {
      const growth = await rssOf(1883, rssConnections, () => undefined, () => vmRss(mosquittoPid));
      rows.push(`${rssConnections} connected clients  mosquitto         RSS growth: peak ${per10k(growth.peak)}, held ${per10k(growth.held)}`);
    }
  }

  const warmed = new Set<number>();
  for (const clients of clientCounts) for (const version of versions) {
    const topic = (i: number) => `device/${ready.devices[i].id}/asset/t/state`;
    // Mosquitto baseline: four subscriber connections in a shared subscription take every message
    // of this run (one alone overflows Mosquitto's per-client queue at QoS 1 with 1000 publishers,
    // and the broker drops what does not fit).
    const mosquittoClients = await connectAll(MOSQUITTO, clients, () => undefined, version);
    const subscribers = await connectAll(MOSQUITTO, 4, () => undefined, version);
    const edgeClients = await connectAll(edgeUrl, clients, (i) => ready.devices[i].token, version);
    // The first configuration of each client count also runs each QoS once unmeasured, on both
    // brokers, so that the edge's code (and the clients') is compiled and its connected devices are
    // read from the registry before it is timed.
    const passes = qosLevels.map((qos) => ({ qos, measured: true }));
    if (!warmed.has(clients)) passes.unshift(...qosLevels.map((qos) => ({ qos, measured: false })));
    warmed.add(clients);
    for (const { qos, measured } of passes) {
      let received = 0;
      const recvLatencies: number[] = [];
      const onMessage = (_t: string, payload: Buffer) => { received++; if (qos === 1) recvLatencies.push(performance.now() - JSON.parse(payload.toString()).value); };
      for (const sub of subscribers) {
        sub.on('message', onMessage);
        await sub.subscribeAsync(`$share/${run}/${run}/q${qos}/#`, { qos });
      }
      const baseBefore = cpuNow(mosquittoPid);
      const base = await drive(mosquittoClients, (i) => `${run}/q${qos}/${topic(i)}`, total, qos, limitMs, () => received, recvLatencies, false);
      const baseAfter = cpuNow(mosquittoPid);
      if (qos === 1) {
        recvLatencies.sort((a, b) => a - b);
        base.p50 = percentile(recvLatencies, 0.5);
        base.p99 = percentile(recvLatencies, 0.99);
      }
      for (const sub of subscribers) {
        sub.off('message', onMessage);
        await sub.unsubscribeAsync(`$share/${run}/${run}/q${qos}/#`);
      }

      const before = await ask('count', { type: 'count' });
      const cpuBefore = cpuNow(undefined);
      const edge = await drive(edgeClients, topic, total, qos, limitMs, async () => (await appendedNow()) - before.appended, [], true);
      if (!measured) {
        // The external mode's code is compiled (and its garbage collected) before it is timed too, not
        // during the next edge scenario: the first QoS 1 scenario after the first external-mode one
        // had 4.9-9.7 µs per message of other threads' CPU, the others 2.1-4.0.
        if (withExternal) await externalScenario(mosquittoClients, topic, total, qos, limitMs);
        continue;
      }
      const cpuAfter = cpuNow(undefined);
      const edgeThread = (await ask('count', { type: 'count' })).cpuMicros - before.cpuMicros;

      const label = `MQTT ${version === 5 ? '5    ' : '3.1.1'} QoS ${qos}, ${String(clients).padStart(4)} clients`;
      rows.push(`${label}  mosquitto publish→receipt          ${fmt(base)}   ${cpuLine(baseAfter.mosquitto - baseBefore.mosquitto, baseBefore, baseAfter, base.received)}`);
      rows.push(`${label}  fleetstream edge publish→durable   ${fmt(edge)}   ratio ${(edge.rate / base.rate).toFixed(2)}   ${cpuLine(edgeThread, cpuBefore, cpuAfter, edge.received, edgeThread)}`);
      if (withExternal) {
        const ext = await externalScenario(mosquittoClients, topic, total, qos, limitMs);
        rows.push(`${label}  fleetstream via mosquitto (external mode) publish→durable ${fmt(ext)}   lost ${ext.total - ext.received}/${ext.total}`
          + `${ext.brokerDropped > 0 ? ` (broker reported ${ext.brokerDropped} dropped)` : ''}   ratio ${(ext.rate / base.rate).toFixed(2)} of mosquitto alone`);
      }
      console.log(rows.slice(withExternal ? -3 : -2).join('\n'));
    }
    await Promise.all([...mosquittoClients, ...edgeClients, ...subscribers].map((c) => c.endAsync(true)));
  }

  // Command delivery latency, one at a time.
  const device = ready.devices[0];
  const deviceClient = await mqtt.connectAsync(edgeUrl, { username: device.token, password: device.token, reconnectPeriod: 0 }, false);
  const plainDevice = await mqtt.connectAsync(MOSQUITTO, { reconnectPeriod: 0 }, false);
  const app = await mqtt.connectAsync(MOSQUITTO, { reconnectPeriod: 0 }, false);
  const commandTopic = `${run}/device/${device.id}/asset/led/command`;
  await deviceClient.subscribeAsync(`device/${device.id}/asset/led/command`, { qos: 1 });
  await plainDevice.subscribeAsync(commandTopic, { qos: 1 });
  const measure = async (send: (value: number) => void | Promise<void>, client: MqttClient): Promise<number[]> => {
    const out: number[] = [];
    for (let k = 0; k < commandCount; k++) {
      const got = new Promise<void>((resolve) => {
        const onMessage = (_t: string, payload: Buffer) => {
          if (JSON.parse(payload.toString()).value !== k) return;
          client.off('message', onMessage);
          resolve();
        };
        client.on('message', onMessage);
      });
      const t = performance.now();
      await send(k);
      await got;
      out.push(performance.now() - t);
    }
    return out.sort((a, b) => a - b);
  };
  const mosq = await measure((v) => { app.publish(commandTopic, JSON.stringify({ value: v, at: new Date().toISOString() }), { qos: 1 }); }, plainDevice);
  const fleet = await measure((v) => { worker.postMessage({ type: 'command', deviceId: device.id, value: v } satisfies ToWorker); }, deviceClient);
  rows.push(`commands ×${commandCount}  mosquitto publish→receipt   p50 ${percentile(mosq, 0.5).toFixed(2)} ms  p99 ${percentile(mosq, 0.99).toFixed(2)} ms`);
  rows.push(`commands ×${commandCount}  fleetstream topic commands→device receipt  p50 ${percentile(fleet, 0.5).toFixed(2)} ms  p99 ${percentile(fleet, 0.99).toFixed(2)} ms`);
  const direct = await measure((v) => { worker.postMessage({ type: 'deliver', device, value: v } satisfies ToWorker); }, deviceClient);
  rows.push(`commands ×${commandCount}  fleetstream edge deliver→device receipt     p50 ${percentile(direct, 0.5).toFixed(2)} ms  p99 ${percentile(direct, 0.99).toFixed(2)} ms`);
  await Promise.all([deviceClient, plainDevice, app].map((c) => c.endAsync(true)));

  console.log(`\nMQTT on loopback, ${total} messages per scenario, ${limitMs / 1000} s limit each`);
  console.log(rows.join('\n'));
  await ask('stopped', { type: 'stop' });
  await worker.terminate();
}

if (isMainThread) await main();
else {
  const { workerData } = await import('node:worker_threads');
  await engineThread(workerData as number);
}
