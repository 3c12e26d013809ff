/**
 * `fleetstream admin` as an operator runs it: the real CLI in a child process, the service's
 * settings cleared from its environment, and, for the commands that reach a running service, an
 * admin socket served over a registry the test holds (app/adminSocket.ts, as `fleetstream start`
 * serves it).
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { serveAdminSocket } from '../../app/adminSocket.ts';
import type { Registry } from '../../engine/ports/registry.ts';

const bin = new URL('../../bin/fleetstream.ts', import.meta.url).pathname;
const baseEnv = { ...process.env, DATA_DIR: '', DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', LOG_LEVEL: 'error' };

export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
  /** The answer, when `--json` was given and the command succeeded. */
  body?: Record<string, unknown>;
}

/** Runs `fleetstream admin …args` in `cwd` (with `env` over the cleared environment); resolves whatever its exit code. */
export function runAdmin(cwd: string, args: readonly string[], env: Record<string, string | undefined> = {}): Promise<AdminRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'admin', ...args], { cwd, env: { ...baseEnv, ...env } }, (error, stdout, stderr) => {
      const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
      resolve({ code, stdout, stderr, ...(code === 0 && args.includes('--json') ? { body: JSON.parse(stdout) as Record<string, unknown> } : {}) });
    });
  });
}

type PgliteRegistry = Awaited<ReturnType<typeof createPgliteRegistry>>;

export interface AdminService<R extends Registry = Registry> {
  dataDir: string;
  /** The admin socket in the data dir. */
  socketPath: string;
  registry: R;
  /** `fleetstream admin …args --json --data-dir <the data dir>`: the CLI finds the running service there. */
  run(...args: string[]): Promise<AdminRun>;
  /** Closes the socket, then the registry. */
  close(): Promise<void>;
}

/**
 * A running service as the admin CLI sees it: the data dir `dataDir`, made here, with an admin
 * socket over `registry` (default: a PGlite registry in memory), which close() closes too.
 */
export async function serveAdmin(dataDir: string): Promise<AdminService<PgliteRegistry>>;
export async function serveAdmin<R extends Registry>(dataDir: string, registry: R): Promise<AdminService<R>>;
export async function serveAdmin(dataDir: string, registry?: Registry): Promise<AdminService> {
  mkdirSync(dataDir);
  const held = registry ?? await createPgliteRegistry();
  const socketPath = join(dataDir, 'admin.sock');
  try {
    const socket = await serveAdminSocket({ path: socketPath, registry: held });
    return {
      dataDir,
      socketPath,
      registry: held,
      run: (...args) => runAdmin(dirname(dataDir), [...args, '--json', '--data-dir', dataDir]),
      async close() {
        try {
          await socket.close();
        } finally {
          await held.close();
        }
      },
    };
  } catch (error) {
    await held.close();
    throw error;
  }
}
