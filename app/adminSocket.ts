/**
 * The running service's admin endpoint: HTTP over a unix socket in the data directory, reachable only
 * by the service's own user (and root): the socket is 0600, whatever the umask. The CLI talks to it
 * while the service runs, since the embedded registry (PGlite) allows one process per data directory.
 */
import { createServer, request, type Server } from 'node:http';
import { chmodSync, rmSync } from 'node:fs';
import { Hono } from 'hono';
import { getRequestListener } from '@hono/node-server';
import { FleetError, toFleetError } from '../engine/kernel/errors.ts';
import type { Registry } from '../engine/ports/registry.ts';
import { checkAdminInput, runAdminOperation, type AdminContext } from './adminOperations.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { SqlError, type ReadOnlySql } from '../adapters/clickhouse-http/ReadOnlySql.ts';
import { errorBody, statusOfCode } from '../adapters/clickhouse-http/clickhouseHttpAnswers.ts';
import { sqlRequestOf } from '../adapters/clickhouse-http/clickhouseHttpRequest.ts';

/** The longest query `fleetstream sql` takes, bytes (the SQL listener's default, ClickHouse's max_query_size). */
const ADMIN_MAX_QUERY_BYTES = 262_144;

export interface AdminSocket {
  path: string;
  close(): Promise<void>;
}

/** The header the CLI names its OS user in, for the audit log (the socket is the service user's alone: told, not proven). */
export const OPERATOR_HEADER = 'x-fleetstream-operator';

export async function serveAdminSocket(options: { path: string; registry: Registry; context?: AdminContext; sql?: ReadOnlySql; logger?: Logger }): Promise<AdminSocket> {
  const app = new Hono();
  // `fleetstream sql`: the query as the body, its output in the format asked for (ClickHouse's
  // parameters, as the SQL listener reads them), read-only like it; errors as ClickHouse's text.
  app.post('/sql', async (c) => {
    try {
      if (options.sql === undefined) throw new SqlError(1002, 'Code: 1002. DB::Exception: this service keeps its states on a ClickHouse server: query it there. (UNKNOWN_EXCEPTION)');
      const body = await c.req.text();
      const answer = await options.sql.run(sqlRequestOf(new URL(c.req.url).searchParams, body, ADMIN_MAX_QUERY_BYTES));
      return c.body(answer.body as Uint8Array<ArrayBuffer>, 200, { 'content-type': 'application/octet-stream' });
    } catch (error) {
      const e = error instanceof SqlError ? error : new SqlError(1002, `Code: 1002. DB::Exception: ${(error as Error).message}. (UNKNOWN_EXCEPTION)`);
      return c.text(errorBody(e.message), statusOfCode(e.clickhouseCode) as 400, { 'x-clickhouse-exception-code': String(e.clickhouseCode) });
    }
  });
  app.post('/admin/:operation', async (c) => {
    try {
      const body: unknown = await c.req.json().catch(() => {
        throw new FleetError('BAD_REQUEST', 'admin request body must be JSON');
      });
      const name = c.req.param('operation');
      const checked = checkAdminInput(name, body);
      return c.json(await runAdminOperation(options.registry, name, checked, options.context ?? {}, c.req.header(OPERATOR_HEADER) ?? 'unknown',
        (error) => options.logger?.warn('an admin command\'s audit entry was not recorded', { operation: name, error })));
    } catch (error) {
      const fleetError = toFleetError(error);
      return c.json({ code: fleetError.code, detail: fleetError.message }, fleetError.status as 400);
    }
  });
  // A socket left by a killed process would make listen fail with EADDRINUSE.
  rmSync(options.path, { force: true });
  const server: Server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.path, () => resolve());
  });
  // Connecting takes write permission on the socket. It is created with the umask's mode, which the
  // entry point sets to 077 (bin/fleetstream.ts), so this only fixes the mode for good.
  chmodSync(options.path, 0o600);
  return {
    path: options.path,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      rmSync(options.path, { force: true });
    }),
  };
}

/**
 * Calls the admin socket as `operator` (the OS user, for the audit log). Resolves undefined when no
 * service listens there (the caller then opens the registry itself).
 */
export function callAdminSocket(path: string, operation: string, input: Record<string, string>, operator?: string): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(input);
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
    if (operator !== undefined) headers[OPERATOR_HEADER] = operator;
    const req = request({ socketPath: path, path: `/admin/${encodeURIComponent(operation)}`, method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 500, body: JSON.parse(text) as Record<string, unknown> });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(undefined);
      else reject(error);
    });
    req.end(payload);
  });
}

/**
 * Runs `query` on the running service's store, read-only (`fleetstream sql`): its output, or the
 * engine's refusal (status and ClickHouse's text). Resolves undefined when no service listens there.
 */
export function callAdminSql(path: string, query: string, format: string): Promise<{ status: number; body: Buffer } | undefined> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(query, 'utf8');
    const target = `/sql?${new URLSearchParams({ default_format: format })}`;
    const req = request({ socketPath: path, path: target, method: 'POST', headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': payload.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 500, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(undefined);
      else reject(error);
    });
    req.end(payload);
  });
}
