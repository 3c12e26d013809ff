/**
 * `fleetstream sql "SELECT …" [--format F]`: an analyst's query on the embedded store, read-only,
 * output in a ClickHouse format. Through the running service's admin socket (chDB allows one
 * process per data directory, and the service holds it); with no service running, on the data
 * directory itself, read-only the same way. On a ClickHouse server (`--clickhouse-url`) it refuses:
 * query that server with its own clients.
 */
import { existsSync } from 'node:fs';
import { FleetError } from '../engine/kernel/errors.ts';
import type { Config } from '../schemas/config.ts';
import { createChdbReadOnlySql } from '../adapters/chdb/createChdbReadOnlySql.ts';
import { SqlError } from '../adapters/clickhouse-http/ReadOnlySql.ts';
import { sqlRequestOf } from '../adapters/clickhouse-http/clickhouseHttpRequest.ts';
import { callAdminSql } from './adminSocket.ts';
import { dataPaths } from './openPorts.ts';

export interface SqlCommandIo {
  /** The query's output. */
  out(bytes: Uint8Array): void;
  /** What happened, for a person (stderr). */
  say(line: string): void;
}

/** Runs the query; resolves the process's exit code (0, or 1 when the engine refused the query). */
export async function runSqlCommand(config: Config, query: string, format: string, io: SqlCommandIo): Promise<number> {
  if (config.clickhouseUrl) {
    throw new FleetError('VALIDATION_FAILED', 'the states are on the ClickHouse server (--clickhouse-url): query it there (clickhouse-client, its HTTP interface) as a read-only user');
  }
  const paths = dataPaths(config.dataDir);
  const viaSocket = await callAdminSql(paths.adminSocket, query, format);
  if (viaSocket !== undefined) {
    if (viaSocket.status === 200) {
      io.out(viaSocket.body);
      return 0;
    }
    io.say(viaSocket.body.toString('utf8').trimEnd());
    return 1;
  }
  if (!existsSync(paths.chdb)) {
    throw new FleetError('NOT_FOUND', `no service running on data dir ${paths.root} (nothing on ${paths.adminSocket}) and no store there: point --data-dir (DATA_DIR) at your service's data dir`);
  }
  io.say(`no service running; reading the store in data dir ${paths.root} directly`);
  try {
    const answer = await createChdbReadOnlySql({ dir: paths.chdb }).run(sqlRequestOf(new URLSearchParams({ default_format: format }), query, 262_144));
    io.out(answer.body);
    return 0;
  } catch (error) {
    if (!(error instanceof SqlError)) throw error;
    io.say(error.message.trimEnd());
    return 1;
  }
}
