/**
 * The states table, as both ClickHouse adapters create and read it. Every statement here runs
 * unchanged on ClickHouse 18.16 and on current ClickHouse (DESIGN.md §2): plain MergeTree-family
 * DDL, Int64 epoch-ms timestamps, an Enum8 kind plus one typed column per value kind.
 *
 * Idempotence (DESIGN.md §3): the sorting key ends with the uplink id and `seq`, the number of a
 * reading among its uplink's readings of the same asset and ts (StateRow.seq: a batch sent without
 * `at` holds many), so re-appending the rows of an uplink produces rows with an identical key; ReplacingMergeTree folds them during merges and
 * every query reads with FINAL, so duplicates are never visible, even before a merge. There is no
 * partition key: ReplacingMergeTree only folds duplicates inside one partition, and a month key
 * would also make an insert spanning >100 months of device-chosen `at` values fail.
 *
 * Column meaning, for analysts reading the table directly:
 *   value_kind    'null' | 'number' | 'string' | 'boolean' | 'json'
 *   value_number  the number (kind 'number'), else 0
 *   value_string  the string (kind 'string'); the JSON text (kind 'json'); the number's exact
 *                 shortest decimal text (kind 'number', see below); else ''
 *   value_bool    1/0 (kind 'boolean'), else 0
 *   seq           0, or which reading of its uplink at that asset and ts the row is (item order)
 * ClickHouse 18.16 parses decimal floats inexactly (about one value in ten comes back one ulp off,
 * subnormals become 0), so the decimal text of a number is kept beside the Float64 and reads return
 * the exact value from it; value_number serves aggregates and SQL users.
 */

export interface StateTableNames {
  database: string;
  table: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Database and table names are configuration, not data: only plain identifiers are accepted. */
export function checkIdentifier(name: string, what: string): string {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new TypeError(`${what} must match ${IDENTIFIER} (got ${JSON.stringify(name)})`);
  }
  return name;
}

/** `db`.`table`, from checked identifiers. */
export function qualifiedTable(names: StateTableNames): string {
  return `\`${names.database}\`.\`${names.table}\``;
}

/** Insert column order; encodeStateRowsTsv writes fields in exactly this order. */
export const STATE_COLUMNS = [
  'device_id',
  'asset',
  'ts',
  'uplink_id',
  'received_at',
  'value_kind',
  'value_number',
  'value_string',
  'value_bool',
  'seq',
] as const;

export function createDatabaseSql(names: StateTableNames): string {
  return `CREATE DATABASE IF NOT EXISTS \`${names.database}\``;
}

export function createTableSql(names: StateTableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${qualifiedTable(names)} (
  device_id String,
  asset String,
  ts Int64,
  uplink_id String,
  received_at Int64,
  value_kind Enum8('null' = 0, 'number' = 1, 'string' = 2, 'boolean' = 3, 'json' = 4),
  value_number Float64,
  value_string String,
  value_bool UInt8,
  seq UInt16
) ENGINE = ReplacingMergeTree()
ORDER BY (device_id, asset, ts, uplink_id, seq)`;
}

const LITERAL_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  "'": "\\'",
  '\0': '\\0',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
const LITERAL_SPECIAL = /[\\'\0\n\r\t]/g;

/**
 * A ClickHouse string literal. Query parameters (`{x:String}`) do not exist on 18.16, so values
 * from outside (device ids, asset names) are escaped: backslash and quote end or alter a literal;
 * NUL would cut the query short at chDB's C boundary; CR/LF/TAB are escaped to keep logs on one line.
 */
export function quoteString(value: string): string {
  return `'${value.replace(LITERAL_SPECIAL, (c) => LITERAL_ESCAPES[c])}'`;
}

/** An Int64 literal from a safe integer (callers validate first). */
export function int64Literal(value: number): string {
  if (!Number.isSafeInteger(value)) throw new TypeError(`not a safe integer: ${value}`);
  return `toInt64(${value})`;
}
