/**
 * An executor whose "table/database is gone" errors become retriable once the store's init() has
 * found its tables (clickhouseErrors.ts GOING_AWAY_CODES): from then on they mean a server being
 * stopped under load, which comes back, not a table that never existed. Before init they stay
 * final, so a store pointed at the wrong database still fails clearly at start.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { GOING_AWAY_CODES } from './clickhouseErrors.ts';
import type { SqlExecutor } from './SqlExecutor.ts';

export function retriableWhenReady(engine: SqlExecutor): { executor: SqlExecutor; markReady(): void } {
  let ready = false;
  const mapped = (error: unknown): unknown => {
    if (!ready || !(error instanceof FleetError)) return error;
    const clickhouseCode = error.detail?.clickhouseCode;
    if (typeof clickhouseCode !== 'number' || !GOING_AWAY_CODES.has(clickhouseCode)) return error;
    return new FleetError('UNAVAILABLE', error.message, { cause: error, detail: error.detail });
  };
  const executor: SqlExecutor = {
    command: (sql) => engine.command(sql).catch((error) => Promise.reject(mapped(error))),
    select: (sql) => engine.select(sql).catch((error) => Promise.reject(mapped(error))),
    insertTsv: (table, columns, payload) => engine.insertTsv(table, columns, payload).catch((error) => Promise.reject(mapped(error))),
    rowBinaryFromRows: engine.rowBinaryFromRows,
    bindsParameters: engine.bindsParameters,
    close: () => engine.close(),
  };
  if (engine.insertRowBinary) {
    const insert = engine.insertRowBinary.bind(engine);
    executor.insertRowBinary = (table, columns, types, payload) => insert(table, columns, types, payload).catch((error) => Promise.reject(mapped(error)));
  }
  if (engine.stream) {
    const stream = engine.stream.bind(engine);
    executor.stream = (sql, format, params, signal) => stream(sql, format, params, signal).catch((error) => Promise.reject(mapped(error)));
  }
  return {
    executor,
    markReady() {
      ready = true;
    },
  };
}
