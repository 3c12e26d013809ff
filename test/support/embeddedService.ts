/**
 * The service on its embedded defaults (app/createService.ts: PGlite, local log, chDB) on loopback
 * ports, with LPWAN webhook applications, for the suites that go through every channel.
 */
import { writeFileSync } from 'node:fs';
import { createService, type Service } from '../../app/createService.ts';
import { createJsonLogger } from '../../engine/kernel/logger.ts';
import { defaultConfig } from '../../schemas/config.ts';
import type { LpwanApplicationConfig } from '../../schemas/lpwan.ts';

export interface EmbeddedServiceOptions {
  /** A directory the test owns: data and the applications file go under it. */
  dir: string;
  applications: LpwanApplicationConfig[];
  /** Default: log errors only, to nowhere. */
  log?: { level: 'warn' | 'error'; write(line: string): void };
}

export async function startEmbeddedService(options: EmbeddedServiceOptions): Promise<{ service: Service; base: string }> {
  const file = `${options.dir}/lpwan-applications.json`;
  writeFileSync(file, JSON.stringify({ applications: options.applications }));
  const service = await createService({
    config: {
      ...defaultConfig,
      dataDir: `${options.dir}/data`,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      mqtt: { host: '127.0.0.1', port: 0 },
      engine: { ...defaultConfig.engine, partitions: 2, batchDelayMs: 10 },
      lpwanApplicationsFile: file,
    },
    logger: createJsonLogger(options.log ?? { level: 'error', write: () => undefined }),
  });
  return { service, base: `http://127.0.0.1:${service.httpPort}` };
}
