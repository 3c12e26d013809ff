/**
 * The ground export (docs/analytics.md "Export over HTTP") with two edges and two engines, as
 * separate processes on Kafka, PostgreSQL and the ClickHouse server: states sent over HTTP and MQTT
 * through both edges, to devices of both engines' partitions, are exported as CSV and NDJSON
 * through either edge, each state exactly once with the value and time it was sent, the two edges'
 * files alike; Parquet as the server allows it; a stranger, a device token and no token refused as
 * on one edge; a window that ends before it starts and an unknown format refused with the codes of
 * the single-process tests (test/adapters/http/http-export.test.ts).
 *
 * With EDGE_WORKERS_TEST=N (N > 1) each edge runs N edge workers (`--edge-workers N`), each of
 * which opens its own ClickHouse client and exports itself.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import mqtt, { type MqttClient } from 'mqtt';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { partitionFor } from '../../../engine/ports/log.ts';
import { parseCsv } from '../../contracts/stateExport.contract.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { clickhouse, freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { waitFor } from '../../support/tmp.ts';

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const PARTITIONS = 2;
const UPLINKS_PER_DEVICE = 4;
const EDGE_WORKERS = Number(process.env.EDGE_WORKERS_TEST ?? 1);
/** Measurement times: T0 plus a few ms each, so the export's milliseconds are checked too. */
const T0 = Date.UTC(2026, 0, 2, 8);
const ASSETS = [
  { name: 't', is: 'sensor' as const, profile: { type: 'number' } },
  { name: 'label', is: 'sensor' as const, profile: { type: 'string' } },
  { name: 'on', is: 'sensor' as const, profile: { type: 'boolean' } },
];

/** One state as sent: what the export must hold for it. */
interface Sent {
  device: string;
  asset: string;
  at: number;
  value: number | string | boolean;
}

/** A state as an export row: device, asset, `at` in epoch ms, kind, value as typed. */
interface Row {
  device: string;
  asset: string;
  at: number;
  receivedAt: number;
  kind: string;
  value: unknown;
  uplinkId: string;
}

const keyOf = (r: { device: string; asset: string; at: number }) => `${r.device}|${r.asset}|${r.at}`;
const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The CSV's rows, its header checked, its values typed back as the device sent them. */
function csvRows(text: string): Row[] {
  const [head, ...rows] = parseCsv(text);
  assert.is(head.join(','), 'device,asset,at,received_at,kind,value,uplink_id,seq');
  return rows.map((r) => {
    assert.is(r.length, 8, JSON.stringify(r));
    assert.match(r[2], RFC3339_MS);
    assert.match(r[3], RFC3339_MS);
    const value = r[4] === 'number' ? Number(r[5]) : r[4] === 'boolean' ? (r[5] === 'true' ? true : r[5] === 'false' ? false : r[5]) : r[5];
    return { device: r[0], asset: r[1], at: Date.parse(r[2]), receivedAt: Date.parse(r[3]), kind: r[4], value, uplinkId: r[6] };
  });
}

function ndjsonRows(text: string): Row[] {
  assert.ok(text.endsWith('\n'), 'every NDJSON line ends with a newline');
  return text.slice(0, -1).split('\n').map((line) => {
    const o = JSON.parse(line) as { device: string; asset: string; at: string; receivedAt: string; kind: string; value: unknown; uplinkId: string; seq: unknown };
    assert.equal(Object.keys(o).sort(), ['asset', 'at', 'device', 'kind', 'receivedAt', 'seq', 'uplinkId', 'value']);
    assert.match(o.at, RFC3339_MS);
    return { device: o.device, asset: o.asset, at: Date.parse(o.at), receivedAt: Date.parse(o.receivedAt), kind: o.kind, value: o.value, uplinkId: o.uplinkId };
  });
}

/** Problems of an export against what was sent: each state once, with its value, time and kind. */
function exportProblems(rows: Row[], sent: Map<string, Sent>, window: { from: number; to: number }): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    const key = keyOf(row);
    const expected = sent.get(key);
    if (expected === undefined) problems.push(`never sent: ${key}`);
    else if (row.value !== expected.value) problems.push(`${key}: ${JSON.stringify(row.value)}, sent ${JSON.stringify(expected.value)}`);
    else if (row.kind !== typeof expected.value) problems.push(`${key}: kind ${row.kind}, sent a ${typeof expected.value}`);
    if (seen.has(key)) problems.push(`twice: ${key}`);
    seen.add(key);
    if (!(row.receivedAt >= window.from && row.receivedAt <= window.to)) problems.push(`${key}: received at ${new Date(row.receivedAt).toISOString()}, outside the test`);
    if (row.uplinkId === '') problems.push(`${key}: no uplink id`);
  }
  const missing = [...sent.keys()].filter((k) => !seen.has(k));
  if (missing.length > 0) problems.push(`${missing.length} sent states missing, e.g. ${missing[0]}`);
  return problems;
}

/** The lines of a file without its header, sorted: rows come in no promised order. */
const sortedLines = (text: string, header: boolean) => text.split('\n').filter(Boolean).slice(header ? 1 : 0).sort();

withEnv('export-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite(`export: two edges${EDGE_WORKERS > 1 ? ` of ${EDGE_WORKERS} workers` : ''}, two engines, one file`);

  test('states sent over HTTP and MQTT through both edges to devices of both engines export once each, alike through either edge', async () => {
    const id = `fs_export_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-export-distributed-'));
    const processes: FleetProcess[] = [];
    const clients: MqttClient[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'export-distributed', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
    try {
      const owner = await registry.createUser({ name: 'owner' });
      const viewer = await registry.createUser({ name: 'viewer' });
      const stranger = await registry.createUser({ name: 'stranger' });
      const ground = await registry.createGround({ name: 'fleet', userId: owner.entity.id });
      await registry.setMemberRole(ground.id, viewer.entity.id, 'viewer');
      const strangersGround = await registry.createGround({ name: 'elsewhere', userId: stranger.entity.id });
      const foreign = await registry.createDevice({ groundId: strangersGround.id, name: 'foreign', assets: ASSETS });
      const devices: { id: string; token: string }[] = [];
      while (devices.length < 4 || new Set(devices.map((d) => partitionFor(d.id, PARTITIONS))).size < PARTITIONS) {
        const created = await registry.createDevice({ groundId: ground.id, name: `d${devices.length}`, assets: ASSETS });
        devices.push({ id: created.device.id, token: created.token });
      }
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), HTTP_HOST: '127.0.0.1', MQTT_HOST: '127.0.0.1',
        LPWAN_APPLICATIONS_FILE: '',
      };
      const start = async (name: string, role: 'edge' | 'engine') => {
        // One process binds what it is given (0: any free port, read back from its start line); edge
        // workers share ports their primary names, so they get free ones picked here.
        const workers = role === 'edge' && EDGE_WORKERS > 1;
        const ports = role === 'engine' ? { HTTP_PORT: '0', MQTT_PORT: '-1' }
          : workers ? { HTTP_PORT: String(await freePort()), MQTT_PORT: String(await freePort()) } : { HTTP_PORT: '0', MQTT_PORT: '0' };
        const args = workers ? ['--edge-workers', String(EDGE_WORKERS)] : [];
        const p = await startFleet({ name, role, args, env: { ...baseEnv, ...ports, DATA_DIR: join(dir, name) } });
        processes.push(p);
        return { process: p, http: `http://127.0.0.1:${p.httpPort}`, mqttPort: p.mqttPort! };
      };
      const edges = await Promise.all([start('edge-a', 'edge'), start('edge-b', 'edge')]);
      await Promise.all([start('engine-a', 'engine'), start('engine-b', 'engine')]);
      // Both engines hold a partition of `uplinks` before anything is sent: the states are stored by both.
      await admin.connect();
      await waitFor(async () => {
        const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-engine`]);
        if (group?.state !== 'Stable' || group.members.length !== 2) return false;
        return group.members.every((m) => (kafkajs.AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[`${prefix}uplinks`] ?? []).length === 1);
      }, 90_000, 'each engine holds one partition of uplinks');

      const sent = new Map<string, Sent>();
      const record = (s: Sent) => {
        assert.not.ok(sent.has(keyOf(s)), `one state per device, asset and time: ${keyOf(s)}`);
        sent.set(keyOf(s), s);
      };
      const sentFrom = Date.now();
      // HTTP: whole device states, each uplink through the other edge than the one before.
      for (const [i, device] of devices.entries()) {
        for (let k = 0; k < UPLINKS_PER_DEVICE; k++) {
          const at = T0 + i * 60_000 + k * 1_000 + 7;
          const states: Sent[] = [
            { device: device.id, asset: 't', at, value: Number(`${i}${k}.25`) * (k % 2 === 0 ? 1 : -1) },
            { device: device.id, asset: 'label', at, value: `d${i}, "k${k}"\nnext line ü` },
            { device: device.id, asset: 'on', at: at + 1, value: k % 2 === 0 },
          ];
          const body = Object.fromEntries(states.map((s) => [s.asset, { value: s.value, at: new Date(s.at).toISOString() }]));
          const res = await fetch(`${edges[(i + k) % 2].http}/device/${device.id}/state`, {
            method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
          });
          assert.is(res.status, 202, await res.text());
          states.forEach(record);
        }
      }
      // MQTT: one asset's state per message, each device through both edges' brokers; PUBACK (MQTT 5) once durable.
      for (const [e, edge] of edges.entries()) {
        for (const [i, device] of devices.entries()) {
          const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${edge.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0, protocolVersion: 5 });
          client.on('error', () => undefined);
          clients.push(client);
          const s: Sent = { device: device.id, asset: 't', at: T0 + 3_600_000 + i * 1_000 + e * 10 + 3, value: 1000 * (e + 1) + i + 0.5 };
          await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: s.value, at: new Date(s.at).toISOString() }), { qos: 1 });
          record(s);
          await client.endAsync();
        }
      }
      const sentTo = Date.now();
      assert.ok(new Set([...sent.values()].map((s) => partitionFor(s.device, PARTITIONS))).size === PARTITIONS, 'states of both partitions sent');

      // A new connection each: with edge workers, the edge's primary hands them to its workers in turn.
      const get = (edge: { http: string }, path: string, token: string, headers: Record<string, string> = {}) =>
        fetch(`${edge.http}${path}`, { headers: { authorization: `Bearer ${token}`, connection: 'close', ...headers } });
      const exportPath = `/ground/${ground.id}/export`;
      // Stored: the export through edge A holds as many rows as were sent (more would be a problem, checked below).
      await waitFor(async () => {
        const res = await get(edges[0], `${exportPath}?format=ndjson`, viewer.token);
        const text = await res.text();
        return res.status === 200 && text.split('\n').filter(Boolean).length >= sent.size;
      }, 60_000, `${sent.size} states stored`);

      const window = { from: sentFrom - 1_000, to: sentTo + 60_000 };
      const files: Record<string, { csv: string; ndjson: string }> = {};
      for (const [e, edge] of edges.entries()) {
        const name = e === 0 ? 'edge A' : 'edge B';
        // Through each of the edge's workers: the files are the same.
        const others = await Promise.all(Array.from({ length: EDGE_WORKERS - 1 }, async () => (await get(edge, exportPath, viewer.token)).text()));
        const csv = await get(edge, exportPath, viewer.token);
        assert.is(csv.status, 200, name);
        assert.is(csv.headers.get('content-type'), 'text/csv; charset=utf-8; header=present');
        assert.match(csv.headers.get('content-disposition')!, new RegExp(`^attachment; filename="ground-${ground.id}-[0-9T-]+Z\\.csv"$`));
        assert.is(csv.headers.get('cache-control'), 'no-store');
        const csvText = await csv.text();
        assert.equal(exportProblems(csvRows(csvText), sent, window), [], `the CSV through ${name}`);
        for (const other of others) assert.equal(sortedLines(other, true), sortedLines(csvText, true), `the CSV alike through each worker of ${name}`);
        const ndjson = await get(edge, exportPath, owner.token, { accept: 'application/x-ndjson' });
        assert.is(ndjson.status, 200, name);
        assert.is(ndjson.headers.get('content-type'), 'application/x-ndjson');
        const ndjsonText = await ndjson.text();
        assert.equal(exportProblems(ndjsonRows(ndjsonText), sent, window), [], `the NDJSON through ${name}`);
        files[name] = { csv: csvText, ndjson: ndjsonText };
      }
      assert.equal(sortedLines(files['edge A'].csv, true), sortedLines(files['edge B'].csv, true), 'the CSV alike through either edge');
      assert.is(files['edge A'].csv.split('\n')[0], files['edge B'].csv.split('\n')[0]);
      assert.equal(sortedLines(files['edge A'].ndjson, false), sortedLines(files['edge B'].ndjson, false), 'the NDJSON alike through either edge');
      // The CSV and the NDJSON are the same states: uplink ids and receive times too.
      const project = (rows: Row[]) => rows.map((r) => JSON.stringify([keyOf(r), r.uplinkId, r.receivedAt])).sort();
      assert.equal(project(csvRows(files['edge A'].csv)), project(ndjsonRows(files['edge B'].ndjson)));

      // A selection is the same through either edge: one device of each partition, one asset, a window.
      const picked = [0, 1].map((p) => devices.find((d) => partitionFor(d.id, PARTITIONS) === p)!);
      const from = T0 + 1_000;
      const to = T0 + 3_600_000 + 5;
      const selection = `${exportPath}?devices=${picked.map((d) => d.id).join(',')}&assets=t&from=${new Date(from).toISOString()}&to=${to}&format=csv`;
      const expected = new Map([...sent].filter(([, s]) => picked.some((d) => d.id === s.device) && s.asset === 't' && s.at >= from && s.at < to));
      assert.ok(expected.size > 2, 'the window holds some states and leaves some out');
      const selected = await Promise.all(edges.map(async (edge) => {
        const res = await get(edge, selection, viewer.token);
        assert.is(res.status, 200);
        return res.text();
      }));
      assert.equal(exportProblems(csvRows(selected[0]), expected, window), [], 'the selection through edge A');
      assert.equal(sortedLines(selected[0], true), sortedLines(selected[1], true), 'the selection alike through either edge');

      // Parquet: ClickHouse 18.16 has no Parquet writer (406 with what it writes); a later server writes it.
      const version = (await clickhouse(env.CLICKHOUSE_URL, 'SELECT version()')).trim();
      for (const edge of edges) {
        const parquet = await get(edge, `${exportPath}?format=parquet`, viewer.token);
        if (version.startsWith('18.')) {
          assert.is(parquet.status, 406);
          assert.is(parquet.headers.get('content-type'), 'application/problem+json');
          const problem = (await parquet.json()) as { code: string; allowed: string[] };
          assert.equal([problem.code, problem.allowed], ['NOT_ACCEPTABLE', ['csv', 'ndjson']]);
        } else {
          assert.is(parquet.status, 200);
          assert.is(Buffer.from(await parquet.arrayBuffer()).subarray(0, 4).toString('latin1'), 'PAR1');
        }
      }

      // Who may export, on either edge: a stranger is 403 as on one edge, a device token reads its
      // device and not its ground, no token is 401; the stranger's own ground exports none of ours.
      for (const edge of edges) {
        const strangers = await get(edge, exportPath, stranger.token);
        assert.is(strangers.status, 403, 'not a member');
        assert.is(strangers.headers.get('content-type'), 'application/problem+json');
        assert.is(((await strangers.json()) as { code: string }).code, 'FORBIDDEN');
        const named = await get(edge, `${exportPath}?devices=${devices[0].id}`, stranger.token);
        assert.is(named.status, 403, 'not a member, naming a device');
        await named.arrayBuffer();
        const device = await get(edge, exportPath, devices[0].token);
        assert.is(device.status, 403, 'a device token reads its own device, not its ground');
        await device.arrayBuffer();
        const anonymous = await fetch(`${edge.http}${exportPath}`);
        assert.is(anonymous.status, 401);
        await anonymous.arrayBuffer();
        const theirs = await get(edge, `/ground/${strangersGround.id}/export?devices=${devices[0].id}`, stranger.token);
        assert.is(theirs.status, 422, 'another ground\'s device is not one of the stranger\'s ground');
        assert.ok(((await theirs.json()) as { errors: { path: string }[] }).errors.some((x) => x.path === 'query.devices'));
        const own = await get(edge, `/ground/${strangersGround.id}/export?format=ndjson`, stranger.token);
        assert.is(own.status, 200);
        assert.is(await own.text(), '', `${foreign.device.id} sent nothing: an empty file, none of ours`);
      }

      // Hostile parameters, as the single-process tests refuse them: problem+json, the same codes, on either edge.
      for (const edge of edges) {
        const backwards = await get(edge, `${exportPath}?from=${T0 + 1}&to=${T0}`, viewer.token);
        assert.is(backwards.status, 422);
        assert.is(backwards.headers.get('content-type'), 'application/problem+json');
        const problem = (await backwards.json()) as { code: string; errors: { path: string }[] };
        assert.is(problem.code, 'VALIDATION_FAILED');
        assert.ok(problem.errors.some((x) => x.path === 'query.from'), JSON.stringify(problem.errors));
        const format = await get(edge, `${exportPath}?format=xlsx`, viewer.token);
        assert.is(format.status, 406);
        assert.is(format.headers.get('content-type'), 'application/problem+json');
        const notAcceptable = (await format.json()) as { code: string; allowed: string[] };
        assert.is(notAcceptable.code, 'NOT_ACCEPTABLE');
        assert.ok(notAcceptable.allowed.includes('csv') && notAcceptable.allowed.includes('ndjson'), JSON.stringify(notAcceptable));
        const injected = await get(edge, `${exportPath}?devices=${encodeURIComponent("x') OR 1=1 --")}`, viewer.token);
        assert.is(injected.status, 422);
        assert.is(((await injected.json()) as { code: string }).code, 'VALIDATION_FAILED');
      }
    } finally {
      for (const c of clients) c.end(true);
      await registry.close();
      await Promise.all(processes.map((p) => p.stop()));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'export-distributed' });
    }
  });

  test.run();
});
