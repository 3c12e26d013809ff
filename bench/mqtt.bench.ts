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
 * (0 MB growth, against 31 MB for a fresh one). Those collections give back what V8 keeps for speed
 * (`collect(true)`: the young generation grown under load, as the service's collection once it is
 * ready and V8's memory reducer in an idle process do), and the first reading waits until RSS holds
 * still. With plain full collections `held` counted V8's young generation instead: grown (32 → 64 MB
 * semi-spaces) when the connections' survivors crossed its threshold, or shrunk by the memory reducer
 * during the measurement — 35-43 MB in runs of the same code, -416 MB in another. `peak` still counts
 * it: connecting allocates ~25 KB per device (mqtt-packet's CONNECT and SUBSCRIBE parsing the most).
 * `2000 100 50 60 - 5 off 10000 1`, two runs: the edge held 21-22 MB per 10 000 (peak 63-66), 32
 * (peak 85-92) before its connections made what few of them use lazy; a fresh Mosquitto 31 (31).
 *
 * Fleetstream (edge, log, engine) runs in a worker thread; every MQTT client runs in the main thread
 * for both brokers, so the load generator's cost is the same on both sides.
 * The process runs with the service's start flags (package.json's start script), set before the worker starts.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { Worker } from 'node:worker_threads';
import { newId } from '../engine/kernel/ids.ts';
import { useStartFlags } from '../test/support/startFlags.ts';
import { collect } from './support/collect.ts';
import { MOSQUITTO, type FromWorker, type ToWorker } from './support/mqttEngineThread.ts';
import { connectAll, cpuLine, cpuNow, drive, mosquittoProcess, percentile, type Outcome } from './support/mqttLoad.ts';
import { recordCosts } from './support/costs.ts';
import { FRESH_MOSQUITTO_PORT, freshMosquitto, rssOf, vmRss } from './support/mqttMemory.ts';

interface Settings {
  total: number;
  clientCounts: number[];
  commandCount: number;
  limitMs: number;
  externalConnections: number | undefined;
  versions: (4 | 5)[];
  withExternal: boolean;
  rssConnections: number;
  qosLevels: (0 | 1)[];
  /** Names this run's Mosquitto topics and shared subscriptions apart from others'. */
  run: string;
}

/** The Fleetstream worker thread, asked by message. */
interface Engine {
  worker: Worker;
  ready: Extract<FromWorker, { type: 'ready' }>;
  ask<T extends FromWorker['type']>(type: T, message?: ToWorker): Promise<Extract<FromWorker, { type: T }>>;
  appendedNow(): Promise<number>;
}

function settingsOf(argv: string[]): Settings {
  return {
    total: Number(argv[2] ?? 60_000),
    clientCounts: (argv[3] ?? '100,1000').split(',').map(Number),
    commandCount: Number(argv[4] ?? 200),
    limitMs: Number(argv[5] ?? 60) * 1000,
    externalConnections: argv[6] === undefined || argv[6] === '-' ? undefined : Number(argv[6]),
    versions: (argv[7] ?? '4,5').split(',').map(Number) as (4 | 5)[],
    withExternal: (argv[8] ?? 'on') !== 'off',
    rssConnections: Number(argv[9] ?? 10_000),
    qosLevels: (argv[10] ?? '0,1').split(',').map(Number) as (0 | 1)[],
    run: `fsbench-${process.pid}-${newId().slice(0, 6)}`,
  };
}

async function startEngine(deviceCount: number): Promise<Engine> {
  // The service's start flags (the garbage collector's among them) for the edge's thread, as `npm start` runs it.
  useStartFlags();
  const worker = new Worker(new URL('./support/mqttEngineThread.ts', import.meta.url), { workerData: deviceCount });
  const waiting = new Map<string, (m: FromWorker) => void>();
  worker.on('message', (m: FromWorker) => { waiting.get(m.type)?.(m); waiting.delete(m.type); });
  const ask = <T extends FromWorker['type']>(type: T, message?: ToWorker) => new Promise<Extract<FromWorker, { type: T }>>((resolve) => {
    waiting.set(type, resolve as (m: FromWorker) => void);
    if (message) worker.postMessage(message);
  });
  console.log(`setting up ${deviceCount} devices…`);
  const ready = await ask('ready');
  return { worker, ready, ask, appendedNow: async () => (await ask('count', { type: 'count' })).appended };
}

const fmt = (o: Outcome) => `${o.rate.toFixed(0).padStart(7)} msg/s${o.received < o.total ? ` (${o.received}/${o.total} arrived)` : ''}`
  + (o.p50 !== undefined ? `  p50 ${o.p50.toFixed(2)} ms  p99 ${o.p99!.toFixed(2)} ms` : '');

/**
 * Memory first, while the process holds nothing but its devices: after the scenarios the edge's
 * connections fit in heap they freed (V8 keeps its pages), 1-2 MB per 10 000 printed.
 */
async function memoryRows(engine: Engine, rssConnections: number, mosquittoPid: number | undefined): Promise<string[]> {
  const rows: string[] = [];
  const per10k = (bytes: number) => `${((bytes / rssConnections) * 10_000 / 1024 / 1024).toFixed(0)} MB per 10 000`;
  const settle = async () => {
    await engine.ask('collected', { type: 'collect', shrink: true });
    collect(true);
  };
  const { ready } = engine;
  const edgeGrowth = await rssOf(ready.port, rssConnections, (i) => ready.devices[i % ready.devices.length], () => process.memoryUsage().rss, settle);
  rows.push(`${rssConnections} connected devices  fleetstream edge  RSS growth: peak ${per10k(edgeGrowth.peak)}, held ${per10k(edgeGrowth.held)}`);
  recordCosts(`bench/mqtt.bench.ts, ${rssConnections} connections (held RSS growth)`, { edgeBytesPerConnection: edgeGrowth.held / rssConnections });
  const fresh = await freshMosquitto();
  if (fresh !== undefined) {
    const growth = await rssOf(FRESH_MOSQUITTO_PORT, rssConnections, () => undefined, () => vmRss(fresh.pid));
    fresh.stop();
    rows.push(`${rssConnections} connected clients  mosquitto (fresh) RSS growth: peak ${per10k(growth.peak)}, held ${per10k(growth.held)}`);
  } else if (mosquittoPid !== undefined) {
    const growth = await rssOf(1883, rssConnections, () => undefined, () => vmRss(mosquittoPid));
    rows.push(`${rssConnections} connected clients  mosquitto         RSS growth: peak ${per10k(growth.peak)}, held ${per10k(growth.held)}`);
  }
  return rows;
}

/**
 * External mode: the devices publish to Mosquitto (at QoS 1 each has the broker's PUBACK), an
 * instance with `externalConnections` shared-subscription connections appends; what never
 * reaches the log is lost. The broker's own drop counter ($SYS, every 10 s) is read at the end.
 */
async function externalScenario(engine: Engine, s: Settings, clients: MqttClient[], topicOf: (i: number) => string, qos: 0 | 1) {
  await engine.ask('external', { type: 'external', on: true, connections: s.externalConnections });
  const before = await engine.appendedNow();
  const outcome = await drive(clients, topicOf, s.total, qos, s.limitMs, async () => (await engine.appendedNow()) - before, [], false);
  const { brokerDropped } = await engine.ask('external', { type: 'external', on: false });
  return { ...outcome, brokerDropped };
}

/** Mosquitto baseline: publish → receipt by `subscribers` in one shared subscription of this run. */
async function mosquittoScenario(s: Settings, clients: MqttClient[], subscribers: MqttClient[], topicOf: (i: number) => string, qos: 0 | 1, mosquittoPid: number | undefined) {
  let received = 0;
  const recvLatencies: number[] = [];
  const onMessage = (_t: string, payload: Buffer) => { received++; if (qos === 1) recvLatencies.push(performance.now() - JSON.parse(payload.toString()).value); };
  for (const sub of subscribers) {
    sub.on('message', onMessage);
    await sub.subscribeAsync(`$share/${s.run}/${s.run}/q${qos}/#`, { qos });
  }
  const before = cpuNow(mosquittoPid);
  const base = await drive(clients, (i) => `${s.run}/q${qos}/${topicOf(i)}`, s.total, qos, s.limitMs, () => received, recvLatencies, false);
  const after = cpuNow(mosquittoPid);
  if (qos === 1) {
    recvLatencies.sort((a, b) => a - b);
    base.p50 = percentile(recvLatencies, 0.5);
    base.p99 = percentile(recvLatencies, 0.99);
  }
  for (const sub of subscribers) {
    sub.off('message', onMessage);
    await sub.unsubscribeAsync(`$share/${s.run}/${s.run}/q${qos}/#`);
  }
  return { base, cpu: cpuLine(after.mosquitto - before.mosquitto, before, after, base.received) };
}

/** One client count and MQTT version: each QoS on Mosquitto, the edge and (when on) external mode. */
async function ingestRows(engine: Engine, s: Settings, clients: number, version: 4 | 5, warm: boolean, mosquittoPid: number | undefined): Promise<string[]> {
  const rows: string[] = [];
  const { ready } = engine;
  const topic = (i: number) => `device/${ready.devices[i].id}/asset/t/state`;
  // Mosquitto baseline: four subscriber connections in a shared subscription take every message
  // of this run (one alone overflows Mosquitto's per-client queue at QoS 1 with 1000 publishers,
  // and the broker drops what does not fit).
  const mosquittoClients = await connectAll(MOSQUITTO, clients, () => undefined, version);
  const subscribers = await connectAll(MOSQUITTO, 4, () => undefined, version);
  const edgeClients = await connectAll(`mqtt://127.0.0.1:${ready.port}`, clients, (i) => ready.devices[i].token, version);
  // The first configuration of each client count also runs each QoS once unmeasured, on both
  // brokers, so that the edge's code (and the clients') is compiled and its connected devices are
  // read from the registry before it is timed.
  const passes = s.qosLevels.map((qos) => ({ qos, measured: true }));
  if (warm) passes.unshift(...s.qosLevels.map((qos) => ({ qos, measured: false })));
  for (const { qos, measured } of passes) {
    const { base, cpu: baseCpu } = await mosquittoScenario(s, mosquittoClients, subscribers, topic, qos, mosquittoPid);
    const before = await engine.ask('count', { type: 'count' });
    const cpuBefore = cpuNow(undefined);
    const edge = await drive(edgeClients, topic, s.total, qos, s.limitMs, async () => (await engine.appendedNow()) - before.appended, [], true);
    if (!measured) {
      // The external mode's code is compiled (and its garbage collected) before it is timed too, not
      // during the next edge scenario: the first QoS 1 scenario after the first external-mode one
      // had 4.9-9.7 µs per message of other threads' CPU, the others 2.1-4.0.
      if (s.withExternal) await externalScenario(engine, s, mosquittoClients, topic, qos);
      continue;
    }
    const cpuAfter = cpuNow(undefined);
    const edgeThread = (await engine.ask('count', { type: 'count' })).cpuMicros - before.cpuMicros;

    const label = `MQTT ${version === 5 ? '5    ' : '3.1.1'} QoS ${qos}, ${String(clients).padStart(4)} clients`;
    rows.push(`${label}  mosquitto publish→receipt          ${fmt(base)}   ${baseCpu}`);
    rows.push(`${label}  fleetstream edge publish→durable   ${fmt(edge)}   ratio ${(edge.rate / base.rate).toFixed(2)}   ${cpuLine(edgeThread, cpuBefore, cpuAfter, edge.received, edgeThread)}`);
    if (s.withExternal) {
      const ext = await externalScenario(engine, s, mosquittoClients, topic, qos);
      rows.push(`${label}  fleetstream via mosquitto (external mode) publish→durable ${fmt(ext)}   lost ${ext.total - ext.received}/${ext.total}`
        + `${ext.brokerDropped > 0 ? ` (broker reported ${ext.brokerDropped} dropped)` : ''}   ratio ${(ext.rate / base.rate).toFixed(2)} of mosquitto alone`);
    }
    console.log(rows.slice(s.withExternal ? -3 : -2).join('\n'));
  }
  await Promise.all([...mosquittoClients, ...edgeClients, ...subscribers].map((c) => c.endAsync(true)));
  return rows;
}

/** Command delivery latency, one at a time. */
async function commandRows(engine: Engine, s: Settings): Promise<string[]> {
  const { ready, worker } = engine;
  const count = s.commandCount;
  const device = ready.devices[0];
  const deviceClient = await mqtt.connectAsync(`mqtt://127.0.0.1:${ready.port}`, { username: device.token, password: device.token, reconnectPeriod: 0 }, false);
  const plainDevice = await mqtt.connectAsync(MOSQUITTO, { reconnectPeriod: 0 }, false);
  const app = await mqtt.connectAsync(MOSQUITTO, { reconnectPeriod: 0 }, false);
  const commandTopic = `${s.run}/device/${device.id}/asset/led/command`;
  await deviceClient.subscribeAsync(`device/${device.id}/asset/led/command`, { qos: 1 });
  await plainDevice.subscribeAsync(commandTopic, { qos: 1 });
  const measure = async (send: (value: number) => void | Promise<void>, client: MqttClient): Promise<number[]> => {
    const out: number[] = [];
    for (let k = 0; k < count; k++) {
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
  const line = (what: string, times: number[]) => `commands ×${count}  ${what}p50 ${percentile(times, 0.5).toFixed(2)} ms  p99 ${percentile(times, 0.99).toFixed(2)} ms`;
  const mosq = await measure((v) => { app.publish(commandTopic, JSON.stringify({ value: v, at: new Date().toISOString() }), { qos: 1 }); }, plainDevice);
  const fleet = await measure((v) => { worker.postMessage({ type: 'command', deviceId: device.id, value: v } satisfies ToWorker); }, deviceClient);
  const rows = [line('mosquitto publish→receipt   ', mosq), line('fleetstream topic commands→device receipt  ', fleet)];
  const direct = await measure((v) => { worker.postMessage({ type: 'deliver', device, value: v } satisfies ToWorker); }, deviceClient);
  rows.push(line('fleetstream edge deliver→device receipt     ', direct));
  await Promise.all([deviceClient, plainDevice, app].map((c) => c.endAsync(true)));
  return rows;
}

async function main(): Promise<void> {
  const s = settingsOf(process.argv);
  const engine = await startEngine(Math.max(...s.clientCounts));
  const mosquittoPid = mosquittoProcess();
  const rows = s.rssConnections > 0 ? await memoryRows(engine, s.rssConnections, mosquittoPid) : [];
  const warmed = new Set<number>();
  for (const clients of s.clientCounts) for (const version of s.versions) {
    rows.push(...await ingestRows(engine, s, clients, version, !warmed.has(clients), mosquittoPid));
    warmed.add(clients);
  }
  rows.push(...await commandRows(engine, s));
  console.log(`\nMQTT on loopback, ${s.total} messages per scenario, ${s.limitMs / 1000} s limit each`);
  console.log(rows.join('\n'));
  await engine.ask('stopped', { type: 'stop' });
  await engine.worker.terminate();
}

await main();
