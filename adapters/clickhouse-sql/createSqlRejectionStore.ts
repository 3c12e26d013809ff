/**
 * A device's recent rejections (engine/ports/rejections.ts) in a `rejections` table beside the
 * states, with the same SQL on chDB and ClickHouse 18.16. Keyed like the states table so a replayed
 * dead letter folds into the one already stored (ReplacingMergeTree + FINAL).
 *
 * `item`, last in the key, keeps refusals of one code and asset in different items of one batch
 * apart (two DUPLICATE_READINGs of one asset are two rows). It holds the item's index plus one, 0
 * for a rejection of no item: the type's default, so rows written before the column read as of no
 * item and a replay of their dead letters (which carry none) still folds into them.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { RejectionQuery, RejectionRow, RejectionStore } from '../../engine/ports/rejections.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { tsvField } from './encodeStateRowsTsv.ts';
import { checkIdentifier, int64Literal, quoteString } from './stateTable.ts';

export interface SqlRejectionStoreOptions {
  database?: string;
  /** Default 'rejections'. */
  table?: string;
  /** Largest `limit` accepted by recent(). Default 1000. */
  maxLimit?: number;
}

export const REJECTION_COLUMNS = ['device_id', 'rejected_at', 'uplink_id', 'code', 'asset', 'reason', 'channel', 'item'] as const;

/** Largest batch item index a row holds (UInt16, index plus one). */
const MAX_ITEM = 65_534;

export interface SqlRejectionStore extends RejectionStore {
  /** Creates the table when missing. */
  init(): Promise<void>;
}

export function createSqlRejectionStore(executor: Pick<SqlExecutor, 'command' | 'select' | 'insertTsv'>, options: SqlRejectionStoreOptions = {}): SqlRejectionStore {
  const database = checkIdentifier(options.database ?? 'fleetstream', 'database');
  const table = checkIdentifier(options.table ?? 'rejections', 'table');
  const maxLimit = options.maxLimit ?? 1000;
  const qualified = `\`${database}\`.\`${table}\``;

  const columns = () => executor.select(`SELECT name FROM system.columns WHERE database = ${quoteString(database)} AND table = ${quoteString(table)}`)
    .then((rows) => rows.map((c) => String(c.name)));

  /**
   * A table made before `item` gets it at init, in one ALTER: a sorting key grows only by columns
   * the same ALTER adds, and (18.16) only without a default expression. Two processes opening one
   * server table at once may both try: the one that loses finds the column there and goes on.
   */
  async function addItem(): Promise<void> {
    try {
      await executor.command(`ALTER TABLE ${qualified} ADD COLUMN item UInt16, MODIFY ORDER BY (device_id, rejected_at, uplink_id, code, asset, item)`);
    } catch (error) {
      if (!(await columns()).includes('item')) throw error;
    }
  }

  return {
    async init() {
      await executor.command(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
      await executor.command(createRejectionTableSql(qualified));
      if (!(await columns()).includes('item')) await addItem();
    },

    async append(rows: readonly RejectionRow[]) {
      if (rows.length === 0) return;
      await executor.insertTsv(`${database}.${table}`, REJECTION_COLUMNS, encodeRejectionRows(rows));
    },

    async recent(deviceId: string, query: RejectionQuery = {}) {
      const limit = checkRecentQuery(query, maxLimit);
      const before = query.before === undefined ? '' : ` AND rejected_at < ${int64Literal(query.before)}`;
      const channels = query.channels === undefined ? '' : ` AND channel IN (${query.channels.map(quoteString).join(', ')})`;
      const rows = await executor.select(`SELECT device_id, rejected_at, uplink_id, code, asset, reason, channel, item FROM ${qualified} FINAL
WHERE device_id = ${quoteString(deviceId)}${before}${channels}
ORDER BY rejected_at DESC, uplink_id DESC, item, code, asset
LIMIT ${limit}`);
      return rows.map(decodeRejection);
    },
  };
}

function createRejectionTableSql(qualified: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified} (
  device_id String,
  rejected_at Int64,
  uplink_id String,
  code String,
  asset String,
  reason String,
  channel String,
  item UInt16
) ENGINE = ReplacingMergeTree()
ORDER BY (device_id, rejected_at, uplink_id, code, asset, item)`;
}

/** The rows as a TabSeparated payload of REJECTION_COLUMNS. */
function encodeRejectionRows(rows: readonly RejectionRow[]): Buffer {
  let payload = '';
  for (const row of rows) {
    if (!Number.isSafeInteger(row.rejectedAt)) throw new FleetError('INVALID_STATE', 'rejectedAt must be an integer epoch ms');
    if (row.item !== undefined && !(Number.isSafeInteger(row.item) && row.item >= 0 && row.item <= MAX_ITEM)) {
      throw new FleetError('INVALID_STATE', `item must be an integer from 0 to ${MAX_ITEM}`);
    }
    payload += `${tsvField(row.deviceId)}\t${row.rejectedAt}\t${tsvField(row.uplinkId)}\t${tsvField(row.code)}\t${tsvField(row.asset)}\t${tsvField(row.reason)}\t${tsvField(row.channel)}\t${row.item === undefined ? 0 : row.item + 1}\n`;
  }
  return Buffer.from(payload);
}

/** The query's limit, once the query is valid. */
function checkRecentQuery(query: RejectionQuery, maxLimit: number): number {
  const limit = query.limit ?? 50;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit) {
    throw new FleetError('VALIDATION_FAILED', `limit must be an integer from 1 to ${maxLimit}`, { detail: { field: 'limit' } });
  }
  if (query.before !== undefined && !Number.isSafeInteger(query.before)) {
    throw new FleetError('VALIDATION_FAILED', 'before must be an integer epoch ms', { detail: { field: 'before' } });
  }
  if (query.channels !== undefined && (!Array.isArray(query.channels) || query.channels.length === 0 || !query.channels.every((c) => typeof c === 'string'))) {
    throw new FleetError('VALIDATION_FAILED', 'channels must be a non-empty list of channel names', { detail: { field: 'channels' } });
  }
  return limit;
}

function decodeRejection(r: Record<string, unknown>): RejectionRow {
  const row: RejectionRow = {
    deviceId: String(r.device_id),
    rejectedAt: Number(r.rejected_at),
    uplinkId: String(r.uplink_id),
    code: String(r.code),
    asset: String(r.asset),
    reason: String(r.reason),
    channel: String(r.channel),
  };
  const item = Number(r.item);
  if (item > 0) row.item = item - 1;
  return row;
}
