/**
 * The service on its embedded defaults (app/createService.ts: PGlite, local log, chDB) on loopback
 * ports — with LPWAN webhook applications for the suites that go through every channel — and a
 * device created the way a user creates one (POST /ground/{id}/devices).
 */
import { writeFileSync } from 'node:fs';
import { createService, type Service } from '../../app/createService.ts';
import { createJsonLogger } from '../../engine/kernel/logger.ts';
import { defaultConfig, type Config } from '../../schemas/config.ts';
import type { LpwanApplicationConfig } from '../../schemas/lpwan.ts';

export interface EmbeddedServiceOptions {
  /** A directory the test owns: data and the applications file go under it. */
  dir: string;
  applications?: LpwanApplicationConfig[];
  /** Default: log errors only, to nowhere. */
  log?: { level: 'warn' | 'error'; write(line: string): void };
  /** Command settings over the defaults (`--command-queue`, `--command-expiry-ms`). */
  commands?: Partial<Config['commands']>;
  /** `--integrations-allow-hosts`: where integrations may send although internal (a receiver on loopback). */
  integrationsAllowHosts?: string[];
  /** Integrations' batching and retry window over the defaults. */
  integrations?: Partial<Config['integrations']>;
  /** The read-only SQL listener (`--sql-port`, `--sql-password`); none by default. */
  sql?: Config['sql'];
  /** `--state-rollups`: on by default. */
  stateRollups?: Config['stateRollups'];
  /** `--retention-sweep-ms` and `--audit-retention-days`: the defaults (an hour, 90 days) unless given. */
  retention?: { sweepMs?: number; auditDays?: number };
  /** The states on a ClickHouse server (`--clickhouse-url`) in `database`, instead of chDB. */
  clickhouse?: { url: string; database: string };
  /** `--edge-workers`; default EDGE_WORKERS_TEST, else 1. */
  edgeWorkers?: number;
}

/** `options` as a string: the directory, with no LPWAN applications. */
export async function startEmbeddedService(options: EmbeddedServiceOptions | string): Promise<{ service: Service; base: string }> {
  const o = typeof options === 'string' ? { dir: options } : options;
  let lpwanApplicationsFile: string | undefined;
  if (o.applications !== undefined) {
    lpwanApplicationsFile = `${o.dir}/lpwan-applications.json`;
    writeFileSync(lpwanApplicationsFile, JSON.stringify({ applications: o.applications }));
  }
  const service = await createService({
    config: {
      ...defaultConfig,
      dataDir: `${o.dir}/data`,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      mqtt: { host: '127.0.0.1', port: 0 },
      metrics: { host: '127.0.0.1', port: 0 },
      engine: { ...defaultConfig.engine, partitions: 2, batchDelayMs: 10 },
      commands: { ...defaultConfig.commands, ...o.commands },
      ...(o.stateRollups === undefined ? {} : { stateRollups: o.stateRollups }),
      integrations: { ...defaultConfig.integrations, ...o.integrations },
      lpwanApplicationsFile,
      ...(o.integrationsAllowHosts === undefined ? {} : { integrationsAllowHosts: o.integrationsAllowHosts }),
      ...(o.sql === undefined ? {} : { sql: o.sql }),
      ...(o.retention?.sweepMs === undefined ? {} : { retentionSweepMs: o.retention.sweepMs }),
      ...(o.retention?.auditDays === undefined ? {} : { auditRetentionDays: o.retention.auditDays }),
      ...(o.clickhouse === undefined ? {} : { clickhouseUrl: o.clickhouse.url, clickhouseDatabase: o.clickhouse.database }),
    },
    logger: createJsonLogger(o.log ?? { level: 'error', write: () => undefined }),
    // The suites run again with the edge in worker processes (test/app/service/edge-workers-suites.test.ts).
    edgeWorkers: o.edgeWorkers ?? Number(process.env.EDGE_WORKERS_TEST ?? 1),
  });
  return { service, base: `http://127.0.0.1:${service.httpPort}` };
}

export interface CreatedDevice {
  id: string;
  token: string;
  /** The token of the user owning the device's ground. */
  userToken: string;
}

export async function createDeviceOverHttp(service: Service, base: string, assets: unknown[]): Promise<CreatedDevice> {
  const user = await service.registry.createUser({ name: 'u' });
  const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await fetch(`${base}/ground/${ground.id}/devices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'device', assets }),
  });
  if (created.status !== 201) throw new Error(`device not created: ${created.status} ${await created.text()}`);
  const device = await created.json() as { id: string; token: string };
  return { id: device.id, token: device.token, userToken: user.token };
}
