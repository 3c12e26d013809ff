/**
 * Helpers for running Fleetstream as separate processes (bin/fleetstream.ts `start --role …`) against
 * real services, feeding them uplinks over HTTP and checking what reached ClickHouse. Used by
 * test/app/distributed/distributed-e2e.test.ts and bench/distributed.bench.ts.
 *
 * Uplink k carries four data points (assets a0..a3, values 4k..4k+3) measured at BASE_AT + k ms, so
 * the stored rows tell which uplink they came from and what they must hold.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { Admin } from 'kafkajs';
import { createKafkaLog } from '../../adapters/kafka/index.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import { partitionFor } from '../../engine/ports/log.ts';
import { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import { dropSchema } from './postgresSchema.ts';
import { freePort } from './freePort.ts';

export { freePort };

const bin = new URL('../../bin/fleetstream.ts', import.meta.url).pathname;

export const ASSETS = ['a0', 'a1', 'a2', 'a3'] as const;
export const POINTS_PER_UPLINK = ASSETS.length;
/** Measurement time of uplink 0, epoch ms (2026-01-01T00:00:00Z). */
export const BASE_AT = Date.UTC(2026, 0, 1);

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface FleetProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Bound HTTP port (edge roles). */
  readonly httpPort: number | undefined;
  /** Bound port of the metrics listener (GET /metrics, loopback). */
  readonly metricsPort: number | undefined;
  /** Bound port of the embedded MQTT edge (edge roles with MQTT_PORT >= 0). */
  readonly mqttPort: number | undefined;
  /** Everything the process wrote so far (JSON log lines). */
  output(): string;
  /** Resident set size, MB; undefined once the process is gone. */
  rssMb(): number | undefined;
  /** Resolves with how the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (drain) and wait; SIGKILL after timeoutMs. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartOptions {
  name: string;
  role: 'edge' | 'engine' | 'all';
  /**
   * Environment on top of process.env (KAFKA_BROKERS, CLICKHOUSE_URL, DATABASE_URL, …). METRICS_PORT
   * is 0 unless given: processes side by side would all want the default 9464.
   */
  env: Record<string, string>;
  /** Extra command-line flags. */
  args?: string[];
  /** How long to wait for "fleetstream started", ms. Default 60 000. */
  startTimeoutMs?: number;
}

/** Spawns `fleetstream start` and resolves once it logged "fleetstream started". */
export async function startFleet(options: StartOptions): Promise<FleetProcess> {
  const child = spawn(process.execPath, [bin, 'start', '--role', options.role, ...(options.args ?? [])], {
    env: { ...process.env, LOG_LEVEL: 'info', METRICS_PORT: '0', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let gone = false;
  void exited.then(() => { gone = true; });
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  let started: Record<string, unknown> | undefined;
  while (started === undefined) {
    const line = output.split('\n').find((l) => l.includes('"msg":"fleetstream started"'));
    if (line) started = JSON.parse(line) as Record<string, unknown>;
    else if (gone) throw new Error(`${options.name} exited during start:\n${output}`);
    else if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not start in time:\n${output}`);
    } else await delay(50);
  }
  const http = typeof started.http === 'string' ? Number(started.http.split(':').pop()) : undefined;
  const metrics = typeof started.metrics === 'string' ? Number(started.metrics.split(':').pop()) : undefined;
  const mqttPort = typeof started.mqtt === 'string' && /:\d+$/.test(started.mqtt) ? Number(started.mqtt.split(':').pop()) : undefined;
  return {
    name: options.name,
    child,
    pid: child.pid!,
    httpPort: http,
    metricsPort: metrics,
    mqttPort,
    output: () => output,
    rssMb: () => (gone ? undefined : rssMbOf(child.pid!)),
    exited,
    async stop(timeoutMs = 30_000) {
      if (gone) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export function rssMbOf(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface TestDevice {
  id: string;
  token: string;
}

/**
 * At least `count` devices of the ground, each with one number sensor `t`, and as many more as it
 * takes to have one on every partition of `partitions`: so that every engine of a group gets some.
 */
export async function devicesOnEveryPartition(registry: Pick<Registry, 'createDevice'>, groundId: string, partitions: number, count: number): Promise<TestDevice[]> {
  const devices: TestDevice[] = [];
  while (new Set(devices.map((d) => partitionFor(d.id, partitions))).size < partitions || devices.length < count) {
    const created = await registry.createDevice({ groundId, name: `d${devices.length}`, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
    devices.push({ id: created.device.id, token: created.token });
  }
  return devices;
}

/** A user, a ground and `count` devices with number assets a0..a3, created in the registry. */
export async function createDevices(registry: Registry, count: number): Promise<TestDevice[]> {
  const user = await registry.createUser({ name: 'fleet-operator' });
  const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
  const devices: TestDevice[] = [];
  for (let i = 0; i < count; i++) {
    const created = await registry.createDevice({
      groundId: ground.id,
      name: `sensor-${i}`,
      assets: ASSETS.map((name) => ({ name, is: 'sensor' as const, profile: { type: 'number' } })),
    });
    devices.push({ id: created.device.id, token: created.token });
  }
  return devices;
}

/**
 * As an operator would: a user and a ground through the admin CLI (with `env`, the service's: on the
 * embedded registry it goes through the running service's admin socket), then `count` devices with
 * number assets a0..a3 over the edge's HTTP API.
 */
export async function createDevicesOverHttp(baseUrl: string, env: Record<string, string>, count: number): Promise<{ devices: TestDevice[]; userToken: string; groundId: string }> {
  const admin = async (...args: string[]) => JSON.parse((await promisify(execFile)(process.execPath, [bin, 'admin', ...args, '--json'], { env: { ...process.env, ...env } })).stdout) as Record<string, string>;
  const user = await admin('create-user', 'fleet-operator');
  const ground = await admin('create-ground', 'fleet', '--user', user.id);
  const devices: TestDevice[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${baseUrl}/ground/${ground.id}/devices`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `sensor-${i}`, assets: ASSETS.map((name) => ({ name, is: 'sensor', profile: { type: 'number' } })) }),
    });
    if (res.status !== 201) throw new Error(`creating a device: ${res.status} ${await res.text()}`);
    const body = await res.json() as { id: string; token: string };
    devices.push({ id: body.id, token: body.token });
  }
  return { devices, userToken: user.token, groundId: ground.id };
}

/** An asset no test device has: a state of it is accepted with the uplink and dead-lettered by the engine. */
export const UNKNOWN_ASSET = 'zz';

/** The JSON device state of uplink k (spec §4.2); with `unknown`, also a state of UNKNOWN_ASSET. */
export function uplinkBody(k: number, unknown = false): string {
  const at = new Date(BASE_AT + k).toISOString();
  const states = ASSETS.map((a, i) => `"${a}":{"value":${k * POINTS_PER_UPLINK + i},"at":"${at}"}`);
  if (unknown) states.push(`"${UNKNOWN_ASSET}":{"value":${k},"at":"${at}"}`);
  return `{${states.join(',')}}`;
}

export interface LoadOptions {
  /** Edge base URL, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  devices: readonly TestDevice[];
  /** Requests in flight at once. */
  concurrency: number;
  /** Uplinks per second over all workers; unset: as fast as answers come. */
  ratePerSecond?: number;
  /** Stop after this many uplinks; unset: until stop(). */
  total?: number;
  /** First uplink number. Default 0. */
  firstK?: number;
  /** Per-request deadline, ms; a request without an answer by then counts as `noAnswer`. Default 60 000. */
  requestTimeoutMs?: number;
  /** Every n-th uplink (k % n === 0) also carries a state of UNKNOWN_ASSET. Unset: none does. */
  unknownAssetEvery?: number;
}

/** HTTP uplinks from many workers over keep-alive connections, with every answer counted. */
export class UplinkLoad {
  /** Uplinks answered 202: durable in the log, so they must be stored. */
  readonly acked = new Set<number>();
  /** Every uplink sent (whatever the answer). */
  readonly sent = new Set<number>();
  /** Uplinks sent with a state of UNKNOWN_ASSET, and those of them answered 202. */
  readonly sentWithUnknown = new Set<number>();
  readonly ackedWithUnknown = new Set<number>();
  readonly statuses = new Map<number, number>();
  /** The first body answered with each status other than 202 (a problem+json names its code). */
  readonly firstBodies = new Map<number, string>();
  /** 503 answers without a Retry-After header. */
  missingRetryAfter = 0;
  /** Requests that failed without an HTTP answer (connection reset, timeout). */
  noAnswer = 0;
  /** Time of each answer by status, ms since start(), for looking at when 503s came. */
  readonly timeline: Array<{ t: number; status: number }> = [];
  readonly #options: LoadOptions;
  readonly #agent: Agent;
  #next: number;
  #stopped = false;
  #workers: Promise<void>[] = [];
  #started = 0;

  constructor(options: LoadOptions) {
    this.#options = options;
    this.#next = options.firstK ?? 0;
    this.#agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  }

  get nextK(): number {
    return this.#next;
  }

  start(): this {
    this.#started = Date.now();
    for (let i = 0; i < this.#options.concurrency; i++) this.#workers.push(this.#work());
    return this;
  }

  /** Stops sending and waits for the answers of requests in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#workers);
    this.#agent.destroy();
  }

  /** Resolves when `total` uplinks were sent and answered. */
  async finished(): Promise<void> {
    await Promise.all(this.#workers);
    this.#agent.destroy();
  }

  async #work(): Promise<void> {
    const first = this.#options.firstK ?? 0;
    const { total, ratePerSecond } = this.#options;
    while (!this.#stopped) {
      if (total !== undefined && this.#next - first >= total) return;
      const k = this.#next++;
      if (ratePerSecond !== undefined) {
        const due = this.#started + ((k - first) * 1000) / ratePerSecond;
        const wait = due - Date.now();
        if (wait > 0) await delay(wait);
      }
      const device = this.#options.devices[k % this.#options.devices.length];
      const every = this.#options.unknownAssetEvery;
      const unknown = every !== undefined && k % every === 0;
      this.sent.add(k);
      if (unknown) this.sentWithUnknown.add(k);
      const answer = await this.#put(device, k, unknown);
      if (answer === undefined) {
        this.noAnswer++;
        continue;
      }
      this.statuses.set(answer.status, (this.statuses.get(answer.status) ?? 0) + 1);
      if (answer.status !== 202 && !this.firstBodies.has(answer.status)) this.firstBodies.set(answer.status, answer.body);
      this.timeline.push({ t: Date.now() - this.#started, status: answer.status });
      if (answer.status === 202) {
        this.acked.add(k);
        if (unknown) this.ackedWithUnknown.add(k);
      }
      else if (answer.status === 503 && !answer.retryAfter) this.missingRetryAfter++;
    }
  }

  #put(device: TestDevice, k: number, unknown: boolean): Promise<{ status: number; retryAfter: string | undefined; body: string } | undefined> {
    const url = new URL(`/device/${device.id}/state`, this.#options.baseUrl);
    const body = uplinkBody(k, unknown);
    return new Promise((resolve) => {
      const req = request(url, {
        method: 'PUT',
        agent: this.#agent,
        timeout: this.#options.requestTimeoutMs ?? 60_000,
        headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => { chunks.push(chunk); });
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, body: Buffer.concat(chunks).toString('utf8').slice(0, 500) });
        });
        res.on('error', () => resolve(undefined));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(undefined));
      req.end(body);
    });
  }
}

/**
 * Uplinks firstK .. firstK+count-1 appended straight to the uplinks topic the way the edge appends
 * them (UplinkIngest on the Kafka log), without HTTP: a backlog built in seconds on a busy machine.
 * Resolves with the uplinks Kafka acknowledged.
 */
export async function appendUplinks(options: { brokers: string[]; topic: string; devices: readonly TestDevice[]; firstK: number; count: number }): Promise<Set<number>> {
  const log = createKafkaLog({ brokers: options.brokers, logLevel: 'nothing' });
  const ingest = new UplinkIngest({ log, clock: systemClock, topic: options.topic, maxPending: 20_000 });
  const acked = new Set<number>();
  const encoder = new TextEncoder();
  try {
    const step = 2000;
    for (let from = options.firstK; from < options.firstK + options.count; from += step) {
      const ks = Array.from({ length: Math.min(step, options.firstK + options.count - from) }, (_, i) => from + i);
      await Promise.all(ks.map(async (k) => {
        const device = options.devices[k % options.devices.length];
        await ingest.append({ channel: 'http', contentType: 'json', deviceId: device.id, body: encoder.encode(uplinkBody(k)) });
        acked.add(k);
      }));
    }
  } finally {
    await ingest.close();
    await log.close();
  }
  return acked;
}

/**
 * A ClickHouse server over its HTTP interface. A request that gets no answer (a connection reset
 * or refused, as by a server that was just restarted) is sent again a few times; the last failure
 * names its cause. Only for statements that may run twice (reads, IF [NOT] EXISTS).
 */
export async function clickhouse(url: string, sql: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${url}/`, { method: 'POST', body: sql });
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      if (attempt >= 5) throw new Error(`ClickHouse at ${url} did not answer ${attempt} times: ${String(error)} (${String(cause)})`);
      console.log(`  ClickHouse at ${url} did not answer (${String(cause ?? error)}); trying again`);
      await delay(500 * attempt);
      continue;
    }
    const text = await res.text();
    if (!res.ok) throw new Error(`ClickHouse ${res.status}: ${text.slice(0, 500)}`);
    return text;
  }
}

export interface StoredCount {
  /** Rows queries see (FINAL): replays of an uplink folded. */
  visible: number;
  /** Rows on disk, duplicates not yet merged away. */
  physical: number;
  /** Visible rows per uplink k. */
  perUplink: Map<number, number>;
  /** Visible rows whose value is not the one uplink k sent for that asset. */
  wrongValues: number;
}

/** What the states table of `database` holds, as queries see it and on disk. */
export async function storedUplinks(url: string, database: string): Promise<StoredCount> {
  const table = `\`${database}\`.states`;
  const rows = (await clickhouse(url, `SELECT ts - ${BASE_AT} AS k, asset, value_number FROM ${table} FINAL FORMAT TabSeparated`)).split('\n').filter(Boolean);
  const perUplink = new Map<number, number>();
  let wrongValues = 0;
  for (const row of rows) {
    const [kText, asset, value] = row.split('\t');
    const k = Number(kText);
    perUplink.set(k, (perUplink.get(k) ?? 0) + 1);
    const index = (ASSETS as readonly string[]).indexOf(asset);
    if (index < 0 || Number(value) !== k * POINTS_PER_UPLINK + index) wrongValues++;
  }
  const physical = Number((await clickhouse(url, `SELECT count() FROM ${table}`)).trim());
  return { visible: rows.length, physical, perUplink, wrongValues };
}

/**
 * Uplinks whose UNKNOWN_ASSET state is recorded in the rejections table (distinct uplink ids: a
 * replay records a rejection again at a new time, so that table may hold it more than once).
 */
export async function rejectedUplinks(url: string, database: string): Promise<number> {
  return Number((await clickhouse(url, `SELECT uniqExact(uplink_id) FROM \`${database}\`.rejections WHERE asset = '${UNKNOWN_ASSET}' AND code = 'UNKNOWN_ASSET'`)).trim());
}

/** Rows visible (FINAL) in the states table; 0 when the table is not there yet. */
export async function visibleRows(url: string, database: string): Promise<number> {
  try {
    return Number((await clickhouse(url, `SELECT count() FROM \`${database}\`.states FINAL`)).trim());
  } catch {
    return 0;
  }
}

/**
 * Problems with what was stored: every acknowledged uplink must show exactly its four data points,
 * and nothing may come from an uplink that was never sent. Uplinks sent but not acknowledged (a 503
 * whose append reached Kafka anyway) may show their four points or none.
 */
export function exactlyOnceProblems(stored: StoredCount, load: { acked: ReadonlySet<number>; sent: ReadonlySet<number> }): string[] {
  const problems: string[] = [];
  let missing = 0;
  let duplicated = 0;
  for (const k of load.acked) {
    const n = stored.perUplink.get(k) ?? 0;
    if (n < POINTS_PER_UPLINK) missing++;
    if (n > POINTS_PER_UPLINK) duplicated++;
  }
  let strangers = 0;
  let partial = 0;
  for (const [k, n] of stored.perUplink) {
    if (!load.sent.has(k)) strangers++;
    else if (!load.acked.has(k) && n !== POINTS_PER_UPLINK) partial++;
  }
  if (missing > 0) problems.push(`${missing} acknowledged uplinks lack data points`);
  if (duplicated > 0) problems.push(`${duplicated} acknowledged uplinks show more than ${POINTS_PER_UPLINK} data points`);
  if (strangers > 0) problems.push(`${strangers} stored uplinks were never sent`);
  if (partial > 0) problems.push(`${partial} unacknowledged uplinks are stored in part or more than once`);
  if (stored.wrongValues > 0) problems.push(`${stored.wrongValues} data points hold the wrong value`);
  return problems;
}

export interface FleetData {
  /** Connected; disconnected here. */
  admin: Admin;
  /** Topic and consumer-group prefix of the fleet (`<id>.`). */
  prefix: string;
  /** The fleet's ClickHouse database and PostgreSQL schema. */
  id: string;
  clickhouseUrl: string;
  databaseUrl: string;
  /** The processes' data dirs. */
  dir: string;
  /** Names the test in what it logs. */
  label: string;
}

/** Removes what a fleet of processes left on the shared servers: topics, groups, database, schema, data dirs. */
export async function removeFleetData(d: FleetData): Promise<void> {
  try {
    const topics = (await d.admin.listTopics()).filter((t) => t.startsWith(d.prefix));
    if (topics.length > 0) await d.admin.deleteTopics({ topics, timeout: 10_000 });
    const groups = (await d.admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(d.prefix));
    await d.admin.deleteGroups(groups).catch(() => undefined);
  } catch (error) {
    console.log(`${d.label}: could not delete the topics of ${d.id}: ${String(error)}`);
  }
  await d.admin.disconnect();
  await clickhouse(d.clickhouseUrl, `DROP DATABASE IF EXISTS \`${d.id}\``).catch(() => undefined);
  await dropSchema(d.databaseUrl, d.id);
  rmSync(d.dir, { recursive: true, force: true });
}
