/**
 * The command history (engine/ports/commandHistory.ts) in a `commands` table beside the states and
 * rejections, with the same SQL on chDB and ClickHouse 18.16: String/Int64/UInt32 columns only, no
 * query parameters (values are escaped literals), ReplacingMergeTree read with FINAL.
 *
 * One row per transition. The sorting key (device, command, status, attempts) names a transition
 * uniquely within a lifecycle: attempts only grow and each attempt passes a status at most once. A
 * command replayed after a restart walks the same keys again, so its rows fold into the ones already
 * stored instead of being listed twice; the version column makes the earliest copy win, so a command
 * keeps the time it was first queued.
 *
 * Columns, for analysts reading the table directly:
 *   device_id, command_id   the command's device and id
 *   status                  queued | sent | delivered | expired | failed
 *   attempts                deliveries tried by then (a `queued` row with attempts > 0 is a resend wait)
 *   changed_at              epoch ms of the change
 *   kind                    asset (MQTT, spec §4.3) | device (LPWAN, spec §4.4)
 *   asset                   asset name of an asset command, else ''
 *   value                   the command value as JSON text (asset → value for a device command)
 *   command_at              ISO 8601 time of the command (spec §2.3 `at`)
 *   issuer, code, reason    who issued it; error code and text of a resend, expiry or failure, else ''
 *   keep                    2^53 − 1 − changed_at: the ReplacingMergeTree version (UInt64, as 18.16 requires)
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommandHistory, CommandHistoryQuery } from '../../engine/ports/commandHistory.ts';
import type { CommandLifecycle, CommandStatus, CommandTransition, CommandView } from '../../schemas/commands.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { tsvField } from './encodeStateRowsTsv.ts';
import { checkIdentifier, int64Literal, quoteString } from './stateTable.ts';

export interface SqlCommandHistoryOptions {
  /** Default 'fleetstream'. */
  database?: string;
  /** Default 'commands'. */
  table?: string;
  /** Default list() limit. Default 100. */
  defaultLimit?: number;
  /** Largest list() limit accepted. Default 1000. */
  maxLimit?: number;
}

export const COMMAND_COLUMNS = ['device_id', 'command_id', 'status', 'attempts', 'changed_at', 'kind', 'asset', 'value', 'command_at', 'issuer', 'code', 'reason', 'keep'] as const;

/** keep = KEEP_BASE − changed_at: the greatest version is the earliest change. */
const KEEP_BASE = Number.MAX_SAFE_INTEGER;

export interface SqlCommandHistory extends CommandHistory {
  /** Creates the database and table when missing. */
  init(): Promise<void>;
}

const STATUSES: ReadonlySet<string> = new Set<CommandStatus>(['queued', 'sent', 'delivered', 'expired', 'failed']);

/**
 * Order of transitions sharing an attempt number: `sent` (attempt k starts), then `queued` (attempt
 * k was not acknowledged: wait to resend), then a final status. Attempt 0 holds only the first
 * `queued` and possibly a final status.
 */
const RANK: Record<CommandStatus, number> = { sent: 0, queued: 1, delivered: 2, expired: 2, failed: 2 };

export function createSqlCommandHistory(executor: Pick<SqlExecutor, 'command' | 'select' | 'insertTsv'>, options: SqlCommandHistoryOptions = {}): SqlCommandHistory {
  const database = checkIdentifier(options.database ?? 'fleetstream', 'database');
  const table = checkIdentifier(options.table ?? 'commands', 'table');
  const defaultLimit = options.defaultLimit ?? 100;
  const maxLimit = options.maxLimit ?? 1000;
  const qualified = `\`${database}\`.\`${table}\``;

  return {
    async init() {
      await executor.command(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
      await executor.command(`CREATE TABLE IF NOT EXISTS ${qualified} (
  device_id String,
  command_id String,
  status String,
  attempts UInt32,
  changed_at Int64,
  kind String,
  asset String,
  value String,
  command_at String,
  issuer String,
  code String,
  reason String,
  keep UInt64
) ENGINE = ReplacingMergeTree(keep)
ORDER BY (device_id, command_id, status, attempts)`);
    },

    async append(transitions: readonly CommandView[]) {
      if (transitions.length === 0) return;
      let payload = '';
      for (const v of transitions) {
        if (!STATUSES.has(v.status)) throw new FleetError('VALIDATION_FAILED', `unknown command status ${JSON.stringify(v.status)}`);
        if (!Number.isSafeInteger(v.updatedAt) || v.updatedAt < 0) throw new FleetError('VALIDATION_FAILED', 'updatedAt must be an integer epoch ms');
        if (!Number.isSafeInteger(v.attempts) || v.attempts < 0 || v.attempts > 0xffffffff) throw new FleetError('VALIDATION_FAILED', 'attempts must be a non-negative integer');
        const value = JSON.stringify(v.value) ?? 'null';
        payload += `${tsvField(v.deviceId)}\t${tsvField(v.id)}\t${v.status}\t${v.attempts}\t${v.updatedAt}\t${tsvField(v.kind)}\t${tsvField(v.asset ?? '')}\t`
          + `${tsvField(value)}\t${tsvField(v.at)}\t${tsvField(v.issuer)}\t${tsvField(v.code ?? '')}\t${tsvField(v.reason ?? '')}\t${KEEP_BASE - v.updatedAt}\n`;
      }
      await executor.insertTsv(`${database}.${table}`, COMMAND_COLUMNS, Buffer.from(payload));
    },

    async list(query: CommandHistoryQuery) {
      if (typeof query?.deviceId !== 'string') throw badQuery('deviceId must be a string', 'deviceId');
      const limit = query.limit ?? defaultLimit;
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit) throw badQuery(`limit must be an integer from 1 to ${maxLimit}`, 'limit');
      for (const field of ['from', 'to'] as const) {
        if (query[field] !== undefined && !Number.isSafeInteger(query[field])) throw badQuery(`${field} must be an integer epoch ms`, field);
      }
      if (query.from !== undefined && query.to !== undefined && query.from >= query.to) return [];
      const device = quoteString(query.deviceId);
      const having: string[] = [];
      if (query.from !== undefined) having.push(`q >= ${int64Literal(query.from)}`);
      if (query.to !== undefined) having.push(`q < ${int64Literal(query.to)}`);
      // Commands first (a page of ids by the time each was queued), then their transitions.
      const heads = await executor.select(`SELECT command_id AS c, min(changed_at) AS q FROM ${qualified} FINAL
WHERE device_id = ${device}
GROUP BY command_id${having.length > 0 ? `\nHAVING ${having.join(' AND ')}` : ''}
ORDER BY q DESC, c DESC
LIMIT ${limit}`);
      if (heads.length === 0) return [];
      const ids = heads.map((h) => String(h.c));
      const rows = await executor.select(`SELECT command_id AS c, status AS s, attempts AS n, changed_at AS t, kind AS k, asset AS a, value AS v,
  command_at AS at, issuer AS i, code, reason
FROM ${qualified} FINAL
WHERE device_id = ${device} AND command_id IN (${ids.map(quoteString).join(', ')})`);
      const byId = new Map<string, Record<string, unknown>[]>();
      for (const r of rows) {
        const id = String(r.c);
        let list = byId.get(id);
        if (list === undefined) byId.set(id, (list = []));
        list.push(r);
      }
      return heads.flatMap((h) => {
        const own = byId.get(String(h.c));
        return own === undefined ? [] : [lifecycle(query.deviceId, String(h.c), Number(h.q), own)];
      });
    },
  };
}

function lifecycle(deviceId: string, id: string, queuedAt: number, rows: Record<string, unknown>[]): CommandLifecycle {
  const transitions: CommandTransition[] = rows.map((r) => {
    const t: CommandTransition = { status: String(r.s) as CommandStatus, changedAt: Number(r.t), attempts: Number(r.n) };
    if (r.code !== '') t.code = String(r.code);
    if (r.reason !== '') t.reason = String(r.reason);
    return t;
  });
  transitions.sort((x, y) => x.attempts - y.attempts || RANK[x.status] - RANK[y.status] || x.changedAt - y.changedAt);
  const last = transitions[transitions.length - 1];
  const first = rows[0];
  const out: CommandLifecycle = {
    id, deviceId, kind: first.k === 'device' ? 'device' : 'asset', value: JSON.parse(String(first.v)) as unknown,
    at: String(first.at), issuer: String(first.i), status: last.status, updatedAt: last.changedAt, attempts: last.attempts,
    queuedAt, transitions,
  };
  if (first.a !== '') out.asset = String(first.a);
  if (last.code !== undefined) out.code = last.code;
  if (last.reason !== undefined) out.reason = last.reason;
  return out;
}

function badQuery(message: string, field: string): FleetError {
  return new FleetError('VALIDATION_FAILED', message, { detail: { field } });
}
