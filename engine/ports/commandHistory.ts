/**
 * Command history port: every lifecycle transition of a command (queued, sent, delivered, expired,
 * failed — DESIGN.md §4), kept so a device's commands can be read back like its state history
 * (`GET /device/{id}/commands`). Implemented by the state store adapters (a `commands` table beside
 * the states, adapters/clickhouse-sql); both pass test/contracts/commandHistory.contract.ts.
 */
import type { CommandLifecycle, CommandView } from '../../schemas/commands.ts';

export interface CommandHistoryQuery {
  deviceId: string;
  /** Inclusive lower bound of the time the command was first queued, epoch ms. */
  from?: number;
  /** Exclusive upper bound of that time, epoch ms. */
  to?: number;
  /** Most commands returned, default 100. */
  limit?: number;
}

export interface CommandHistory {
  /**
   * Appends transitions: each view is the command as it was right after one status change, its
   * `updatedAt` the time of the change. Appending the same transition again (a command replayed
   * after a restart goes through the same statuses with the same attempt numbers) is listed once.
   */
  append(transitions: readonly CommandView[]): Promise<void>;
  /** Commands of a device, newest first by the time they were queued, each with its transitions. */
  list(query: CommandHistoryQuery): Promise<CommandLifecycle[]>;
}
