/**
 * A state store kept in memory, in the shape of the service's (app/openPorts.ts ServiceStore), for
 * stacks whose tests read no states back or answer them themselves: given to openPorts in place of
 * chDB. Rejections are listed in memory; it keeps no command history.
 */
import type { SqlStateStore } from '../../adapters/clickhouse-sql/createSqlStateStore.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommandHistory } from '../../engine/ports/commandHistory.ts';
import type { RejectionQuery, RejectionRow, RejectionStore } from '../../engine/ports/rejections.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { StateRow } from '../../schemas/messages.ts';

/** Rejections kept in memory (the edge only reads them). */
export class MemoryRejections implements RejectionStore {
  rows: RejectionRow[] = [];
  async append(rows: readonly RejectionRow[]): Promise<void> {
    this.rows.push(...rows);
  }
  async recent(deviceId: string, options: RejectionQuery = {}): Promise<RejectionRow[]> {
    return this.rows
      .filter((r) => r.deviceId === deviceId && (options.before === undefined || r.rejectedAt < options.before))
      .filter((r) => options.channels === undefined || options.channels.includes(r.channel))
      .sort((a, b) => b.rejectedAt - a.rejectedAt)
      .slice(0, options.limit ?? 100);
  }
}

/** Reads that find nothing: a store no test reads states back from. */
export const emptyReads: Pick<StateStore, 'latest' | 'history' | 'aggregate'> = {
  latest: async () => [],
  history: async () => [],
  aggregate: async () => [],
};

export interface MemoryStoreParts {
  /** How states are read back (default: nothing found). */
  reads?: Pick<StateStore, 'latest' | 'history' | 'aggregate'>;
  /** Where appended states go (default: `rows`). */
  rows?: StateRow[];
  rejections?: RejectionStore;
}

/** The service store's shape over memory: states appended to `rows`, reads from `reads`. */
export function memoryServiceStore(parts: MemoryStoreParts = {}): SqlStateStore {
  const reads = parts.reads ?? emptyReads;
  const rows = parts.rows ?? [];
  // Neither stack serves command routes: a command reaching this store is a wiring mistake.
  const noHistory = async (): Promise<never> => {
    throw new FleetError('UNAVAILABLE', 'a store kept in memory keeps no command history');
  };
  const commands: CommandHistory = { append: noHistory, list: noHistory };
  return {
    init: async () => undefined,
    close: async () => undefined,
    rollupsCaughtUp: async () => undefined,
    append: async (appended) => {
      rows.push(...appended);
    },
    latest: (deviceId) => reads.latest(deviceId),
    history: (query) => reads.history(query),
    aggregate: (query) => reads.aggregate(query),
    rejections: parts.rejections ?? new MemoryRejections(),
    commands,
    retention: {
      async expireStates(deviceIds, before) {
        const expired = new Set(deviceIds);
        const kept = rows.filter((row) => !(expired.has(row.deviceId) && row.ts < before));
        rows.splice(0, rows.length, ...kept);
      },
      async storedOf(deviceIds) {
        const of = new Set(deviceIds);
        return { rows: rows.filter((row) => of.has(row.deviceId)).length, compressedBytes: 0 };
      },
    },
    storedOf: async (deviceIds) => {
      const of = new Set(deviceIds);
      return { rows: rows.filter((row) => of.has(row.deviceId)).length, compressedBytes: 0 };
    },
    query: async () => {
      throw new FleetError('UNAVAILABLE', 'a store kept in memory runs no SQL');
    },
    exportFormats: async () => [],
    exportStates: async () => {
      throw new FleetError('NOT_ACCEPTABLE', 'a store kept in memory writes no export', { detail: { allowed: [] } });
    },
    layout: { kind: 'compact' },
  };
}
