/**
 * The Grafana dashboards kept in deploy/grafana are valid JSON whose queries name what really
 * exists: every metric a PromQL expression of the operations dashboard names is exposed by a
 * running service under a short load (uplinks admitted and refused, a command, an MQTT connection
 * refused); with Prometheus installed, a real Prometheus scrapes that service and evaluates every
 * expression. The analysts' SQL reads the deduplicated views (never the raw states table, where a
 * replayed uplink counts twice until ClickHouse merges) and runs against a ClickHouse server.
 */
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import mqtt from 'mqtt';
import type { Service } from '../../../app/createService.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { createDeviceOverHttp, startEmbeddedService } from '../../support/embeddedService.ts';
import { freePort } from '../../support/fleetCluster.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface Target { expr?: string; rawSql?: string }
interface Panel { type: string; title: string; datasource?: { type: string }; targets?: Target[]; panels?: Panel[] }
interface Dashboard { uid: string; title: string; panels: Panel[]; templating: { list: Array<{ name: string; query?: unknown }> } }

const dir = new URL('../../../deploy/grafana/dashboards/', import.meta.url).pathname;
const load = (name: string) => JSON.parse(readFileSync(`${dir}${name}`, 'utf8')) as Dashboard;
const operations = load('fleetstream-operations.json');
const states = load('fleetstream-states.json');
const panelsOf = (d: Dashboard) => d.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');
const expressions = panelsOf(operations).flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));

/** What Grafana substitutes before Prometheus sees an expression. */
const promql = (expr: string) => expr.replaceAll('$__rate_interval', '30s');

/** Metric names an expression reads; a histogram's _bucket/_sum/_count series are its own. */
const metricNames = (expr: string) => [...new Set(expr.match(/\bfleetstream_[a-z0-9_]+/g) ?? [])];

const test = suite('dashboards');
const tmp = tempDir('dashboards');
let service: Service;
let base = '';
/** The service's metrics listener (Prometheus scrapes it, not the API port). */
let metricsBase = '';

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
  metricsBase = `http://127.0.0.1:${service.metricsPort}`;
  // A short load that touches every part the dashboard shows.
  const device = await createDeviceOverHttp(service, base, [
    { name: 'temperature', is: 'sensor', profile: { type: 'number', maximum: 100 } },
    { name: 'light', is: 'actuator', profile: { type: 'boolean' } },
  ]);
  for (let i = 0; i < 20; i++) {
    await fetch(`${base}/device/${device.id}/asset/temperature/state`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: i % 5 === 4 ? 500 : i, at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }),
    });
  }
  const command = await fetch(`${base}/device/${device.id}/asset/light/command`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${device.userToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ value: true }),
  });
  assert.is(command.status, 202);
  await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: 'no-such-token', password: 'x', reconnectPeriod: 0 })
    .then((client) => client.endAsync(), () => undefined);
  await waitFor(async () => (await fetch(`${metricsBase}/metrics`)).ok && (await (await fetch(`${metricsBase}/metrics`)).text()).includes('fleetstream_command_transitions_total{status="queued"}'), 15_000, 'command queued');
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

test('both dashboards are valid: unique ids, every panel has a data source and queries', () => {
  for (const dashboard of [operations, states]) {
    assert.ok(dashboard.uid && dashboard.title, 'uid and title');
    const panels = panelsOf(dashboard);
    assert.ok(panels.length >= 5, `${dashboard.uid}: panels`);
    for (const panel of panels) {
      assert.ok(panel.datasource?.type, `${panel.title}: data source`);
      assert.ok((panel.targets ?? []).length > 0, `${panel.title}: queries`);
    }
    const ids = dashboard.panels.map((p) => (p as unknown as { id: number }).id);
    assert.is(new Set(ids).size, ids.length, `${dashboard.uid}: panel ids unique`);
  }
  assert.ok(panelsOf(operations).every((p) => p.datasource!.type === 'prometheus'));
  assert.ok(panelsOf(states).every((p) => p.datasource!.type === 'grafana-clickhouse-datasource'));
  assert.ok(expressions.length >= 20, 'operations dashboard expressions');
  for (const { panel, expr } of expressions) assert.ok(metricNames(expr).length > 0, `${panel}: names a fleetstream metric`);
});

test('every metric the operations dashboard names is exposed by the running service', async () => {
  const text = await (await fetch(`${metricsBase}/metrics`)).text();
  const exposed = new Set([...text.matchAll(/^([a-z_][a-z0-9_]*)(?:\{|\s)/gm)].map((m) => m[1]));
  const missing = expressions.flatMap(({ panel, expr }) => metricNames(expr).filter((name) => !exposed.has(name)).map((name) => `${panel}: ${name}`));
  assert.equal(missing, [], `metrics not exposed:\n${missing.join('\n')}`);
});

withEnv('dashboards: Prometheus', ['PROMETHEUS_BIN'], 'bash scripts/prometheus.sh install; export PROMETHEUS_BIN=$(bash scripts/prometheus.sh bin)', ({ PROMETHEUS_BIN }) => {
  let prometheus: ChildProcess | undefined;
  let api = '';
  let output = '';

  test('a real Prometheus scrapes the service and evaluates every expression of the operations dashboard', async () => {
    const port = await freePort();
    api = `http://127.0.0.1:${port}/api/v1`;
    const config = `${tmp.dir}/prometheus.yml`;
    writeFileSync(config, [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: fleetstream',
      `    static_configs: [{ targets: ['127.0.0.1:${service.metricsPort}'] }]`,
      '',
    ].join('\n'));
    prometheus = spawn(PROMETHEUS_BIN, [
      `--config.file=${config}`, `--storage.tsdb.path=${tmp.dir}/prometheus-data`, `--web.listen-address=127.0.0.1:${port}`,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    prometheus.stdout!.on('data', (d) => { output += d; });
    prometheus.stderr!.on('data', (d) => { output += d; });
    try {
      const query = async (q: string) => {
        const res = await fetch(`${api}/query?query=${encodeURIComponent(q)}`);
        return await res.json() as { status: string; error?: string; data?: { result: unknown[] } };
      };
      // Up, and at least a few scrapes in: rate() needs two samples in its window.
      await waitFor(async () => {
        const up = await query('count_over_time(up{job="fleetstream"}[1m])').catch(() => undefined);
        return up?.status === 'success' && Number((up.data?.result[0] as { value?: [number, string] } | undefined)?.value?.[1] ?? 0) >= 4;
      }, 30_000, `Prometheus scraping the service (${output.slice(-500)})`);
      const up = await query('up{job="fleetstream"}');
      assert.is((up.data!.result[0] as { value: [number, string] }).value[1], '1', 'the scrape succeeds');

      const problems: string[] = [];
      for (const { panel, expr } of expressions) {
        const result = await query(promql(expr));
        if (result.status !== 'success') problems.push(`${panel}: ${expr}: ${result.error}`);
        for (const name of metricNames(expr)) {
          const series = await query(`count({__name__=~"${name}|${name}_bucket"})`);
          if ((series.data?.result.length ?? 0) === 0) problems.push(`${panel}: ${name} has no series in Prometheus`);
        }
      }
      assert.equal(problems, [], problems.join('\n'));
    } finally {
      prometheus.kill('SIGTERM');
      await new Promise((resolve) => prometheus!.once('exit', resolve));
    }
  });
});

withEnv('dashboards: ClickHouse', ['CLICKHOUSE_URL'], 'bash scripts/clickhouse.sh install && bash scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(bash scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL }) => {
  test('the analysts\' SQL reads the deduplicated views, not the raw states table', () => {
    const sqls = [
      ...states.templating.list.map((v) => (typeof v.query === 'string' ? v.query : '')),
      ...panelsOf(states).flatMap((p) => (p.targets ?? []).map((t) => t.rawSql ?? '')),
    ].filter((sql) => sql.includes('FROM'));
    assert.ok(sqls.length >= 6);
    for (const sql of sqls) {
      assert.not.match(sql, /\$\{database\}\.states\b(?!_)/, sql);
      assert.match(sql, /\$\{database\}\.(state_rows|latest_states|states_(minute|hour|day))\b/, sql);
    }
  });

  test('the analysts\' SQL runs against the views, a replayed uplink counted once (macros as the Grafana ClickHouse plugin expands them)', async () => {
    const database = `fleetstream_dash_${randomBytes(4).toString('hex')}`;
    const store = createClickHouseStore({ url: CLICKHOUSE_URL, database });
    const run = async (sql: string) => {
      const res = await fetch(CLICKHOUSE_URL, { method: 'POST', body: `${sql}\nFORMAT JSON` });
      const text = await res.text();
      if (!res.ok) throw new Error(`${sql}\n→ ${text}`);
      return (JSON.parse(text) as { data: Record<string, unknown>[] }).data;
    };
    try {
      await store.init();
      const t0 = Date.UTC(2026, 0, 1);
      const rows = [0, 1, 2].flatMap((i) => [
        { deviceId: 'd1', asset: 'temperature', ts: t0 + i * 60_000, receivedAt: t0, uplinkId: `u${i}`, value: 20 + i },
        { deviceId: 'd1', asset: 'door', ts: t0 + i * 60_000, receivedAt: t0, uplinkId: `u${i}`, value: i % 2 === 0 },
      ]);
      // Stored again, as after an engine's crash: two inserts, two parts, not merged yet.
      await store.append(rows);
      await store.append(rows);
      const from = Math.floor(t0 / 1000) - 60;
      const to = from + 3600;
      const expand = (sql: string, vars: Record<string, string>) => sql
        .replaceAll('$__fromTime', `toDateTime(${from})`)
        .replaceAll('$__toTime', `toDateTime(${to})`)
        .replaceAll('$__interval_s', '60')
        .replace(/\$\{(\w+)\}/g, (_, name: string) => vars[name] ?? `\${${name}}`);
      const vars = { database, device: 'd1', asset: 'temperature' };
      for (const variable of states.templating.list.filter((v) => typeof v.query === 'string' && (v.query as string).startsWith('SELECT'))) {
        const rows = await run(expand(variable.query as string, vars));
        assert.ok(rows.length > 0, `variable ${variable.name} lists values`);
      }
      for (const panel of panelsOf(states)) {
        for (const target of panel.targets ?? []) {
          const rows = await run(expand(target.rawSql ?? '', vars));
          assert.ok(rows.length > 0, `${panel.title}: rows`);
          if (panel.title.includes('numeric states by asset')) assert.is(rows.length, 3, 'each temperature once');
          if (panel.title.includes('latest state')) assert.equal(rows.map((r) => [r.asset, Number(r.number)]), [['door', 0], ['temperature', 22]]);
        }
      }
    } finally {
      await run(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
      await store.close();
    }
  });
});

test.run();
