/**
 * Connectivity (engine/ports/connectivityRegistry.ts) in SQL: last seen times raised in one
 * statement per flush, the edges' leases, the sessions open on them, and the ground's silent
 * devices as a range scan of devices_ground_silent_idx (migration 10).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { ConnectivityRegistry, DeviceActivity, OpenedSession, SilentDevice } from '../../engine/ports/connectivityRegistry.ts';
import type { SqlContext } from './SqlContext.ts';
import { DEVICE_COLUMNS, toDevice, type DeviceRow } from './rows.ts';

/** A lease lapsed this long ago belongs to an edge that is gone: it is dropped with its sessions. */
const DROP_LAPSED_AFTER_MS = 3_600_000;
const MAX_PAGE = 1001;
const SILENT_SINCE = 'COALESCE(last_seen_at, created_at)';

function invalid(field: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { field } });
}

function requireTime(value: unknown, field: string): asserts value is number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) throw invalid(field, 'not an epoch ms time');
}

function requireEdgeId(value: unknown): asserts value is string {
  if (!isId(value)) throw invalid('edgeId', 'not a registry id');
}

/** The entries with a device id that can exist, the latest time per device (ids that cannot exist are skipped). */
function latestPerDevice<T>(entries: readonly T[], field: string, id: (e: T) => unknown, at: (e: T) => unknown): { ids: string[]; times: number[] } {
  if (!Array.isArray(entries)) throw invalid(field, 'not a list');
  const latest = new Map<string, number>();
  entries.forEach((entry, i) => {
    const time = at(entry);
    requireTime(time, `${field}/${i}/at`);
    const deviceId = id(entry);
    if (!isId(deviceId)) return;
    const known = latest.get(deviceId);
    if (known === undefined || time > known) latest.set(deviceId, time);
  });
  // Sorted: two engines updating the same devices (a partition moving) lock them in one order.
  const ids = [...latest.keys()].sort();
  return { ids, times: ids.map((deviceId) => latest.get(deviceId)!) };
}

export function connectivityOperations(ctx: SqlContext): ConnectivityRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async recordActivity(seen: readonly DeviceActivity[]) {
      const { ids, times } = latestPerDevice(seen, 'seen', (e) => e?.deviceId, (e) => e?.at);
      if (ids.length === 0) return;
      await guard(() => executor.query(
        `UPDATE devices d SET last_seen_at = v.at
           FROM unnest($1::text[], $2::bigint[]) AS v(id, at)
          WHERE d.id = v.id AND (d.last_seen_at IS NULL OR d.last_seen_at < v.at)`,
        [ids, times],
      ));
    },

    async renewEdge(edgeId, aliveUntil) {
      requireEdgeId(edgeId);
      requireTime(aliveUntil, 'aliveUntil');
      return guard(async () => {
        const { rows: lapsed } = await executor.query<{ edge_id: string }>('DELETE FROM edges WHERE alive_until < $1 RETURNING edge_id', [clock.now() - DROP_LAPSED_AFTER_MS]);
        if (lapsed.length > 0) await executor.query('DELETE FROM device_sessions WHERE edge_id = ANY($1::text[])', [lapsed.map((r) => r.edge_id)]);
        const { rowCount } = await executor.query('UPDATE edges SET alive_until = $2 WHERE edge_id = $1', [edgeId, aliveUntil]);
        if (rowCount > 0) return true;
        await executor.query('INSERT INTO edges (edge_id, alive_until) VALUES ($1, $2) ON CONFLICT (edge_id) DO UPDATE SET alive_until = EXCLUDED.alive_until', [edgeId, aliveUntil]);
        return false;
      });
    },

    async recordSessions(edgeId, opened: readonly OpenedSession[], closed: readonly string[]) {
      requireEdgeId(edgeId);
      const open = latestPerDevice(opened, 'opened', (e) => e?.deviceId, (e) => e?.since);
      if (!Array.isArray(closed)) throw invalid('closed', 'not a list');
      const reopened = new Set(open.ids);
      const gone = [...new Set(closed.filter((id) => isId(id) && !reopened.has(id)))].sort();
      await guard(async () => {
        if (gone.length > 0) await executor.query('DELETE FROM device_sessions WHERE edge_id = $1 AND device_id = ANY($2::text[])', [edgeId, gone]);
        if (open.ids.length > 0) {
          await executor.query(
            `INSERT INTO device_sessions (device_id, edge_id, since)
             SELECT v.id, $1, v.since FROM unnest($2::text[], $3::bigint[]) AS v(id, since)
             ON CONFLICT (device_id, edge_id) DO UPDATE SET since = EXCLUDED.since`,
            [edgeId, open.ids, open.times],
          );
        }
      });
    },

    async dropEdge(edgeId) {
      if (!isId(edgeId)) return;
      await guard(() => executor.transaction(async (tx) => {
        await tx.query('DELETE FROM device_sessions WHERE edge_id = $1', [edgeId]);
        await tx.query('DELETE FROM edges WHERE edge_id = $1', [edgeId]);
      }));
    },

    async connectivity(deviceId, now) {
      if (!isId(deviceId)) return undefined;
      requireTime(now, 'now');
      return guard(async () => {
        const { rows } = await executor.query<{ last_seen_at: unknown; connected: boolean }>(
          `SELECT d.last_seen_at,
                  EXISTS (SELECT 1 FROM device_sessions s JOIN edges e ON e.edge_id = s.edge_id
                           WHERE s.device_id = d.id AND e.alive_until > $2) AS connected
             FROM devices d WHERE d.id = $1`,
          [deviceId, now],
        );
        const row = rows[0];
        if (row === undefined) return undefined;
        return row.last_seen_at === null ? { connected: row.connected === true } : { lastSeenAt: Number(row.last_seen_at), connected: row.connected === true };
      });
    },

    async listSilentDevices(groundId, query) {
      if (!isId(groundId)) return [];
      requireTime(query?.silentSince, 'silentSince');
      const limit = query.limit ?? null;
      if (limit !== null && (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)) throw invalid('limit', `an integer from 1 to ${MAX_PAGE}`);
      const after = query.after;
      if (after !== undefined) {
        requireTime(after.silentSince, 'after.silentSince');
        if (!isId(after.id)) throw invalid('after.id', 'not a registry id');
      }
      // Two statements rather than `$n IS NULL OR …`, which would keep the planner from the range scan.
      const params: unknown[] = [groundId, query.silentSince, limit];
      let cursor = '';
      if (after !== undefined) {
        cursor = `AND (${SILENT_SINCE}, id) > ($4::bigint, $5::text)`;
        params.push(after.silentSince, after.id);
      }
      return guard(async () => {
        const { rows } = await executor.query<DeviceRow & { last_seen_at: unknown; silent_since: unknown }>(
          `SELECT ${DEVICE_COLUMNS}, last_seen_at, ${SILENT_SINCE} AS silent_since FROM devices
            WHERE ground_id = $1 AND ${SILENT_SINCE} <= $2::bigint ${cursor}
            ORDER BY ${SILENT_SINCE}, id LIMIT $3`,
          params,
        );
        return rows.map((row): SilentDevice => {
          const device: SilentDevice = { ...toDevice(row), silentSince: Number(row.silent_since) };
          if (row.last_seen_at !== null) device.lastSeenAt = Number(row.last_seen_at);
          return device;
        });
      });
    },
  };
}
