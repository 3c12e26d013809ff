/**
 * Export of stored states as a file (docs/analytics.md "Export"): the states of some devices and
 * assets over [from, to), as bytes the store's engine writes itself, so that memory stays the same
 * whatever the number of rows. Implemented beside the state store (adapters/clickhouse-sql/
 * createSqlStateExport.ts) on chDB and on a ClickHouse server; contract:
 * test/contracts/stateExport.contract.ts.
 *
 * Rows are each state once (replayed uplinks folded, as every read of the store), in no promised
 * order: a global ORDER BY would make the engine hold or spill the whole export before its first
 * byte. Within one device and asset they come in the order the engine reads them.
 *
 * Errors: VALIDATION_FAILED for a selection the port refuses; NOT_ACCEPTABLE for a format this
 * engine cannot write (Parquet on ClickHouse 18.16); BACKPRESSURE when `maxConcurrent` exports are
 * already running (retriable); UNAVAILABLE/TIMEOUT when the engine cannot be reached; CLOSED after
 * the store closed. An error after the first bytes ends the stream with that error.
 */

export const EXPORT_FORMATS = ['csv', 'ndjson', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Most devices one export names (the ground export's `devices`, or a ground's devices). */
export const MAX_EXPORT_DEVICES = 500;
/** Most asset names one export names. */
export const MAX_EXPORT_ASSETS = 100;

export interface ExportSelection {
  /** 1..MAX_EXPORT_DEVICES device ids. */
  devices: readonly string[];
  /** Asset names; absent: every asset of those devices. */
  assets?: readonly string[];
  /** Inclusive lower bound of `ts`, epoch ms. */
  from?: number;
  /** Exclusive upper bound of `ts`, epoch ms. */
  to?: number;
  format: ExportFormat;
  /** Aborting it stops the engine's query and ends the stream (a client that went away). */
  signal?: AbortSignal;
}

export interface StateExport {
  /** The formats this engine writes (Parquet only where the engine has it). */
  exportFormats(): Promise<readonly ExportFormat[]>;
  /**
   * Starts the query; resolves once the engine accepted it, with its output as chunks of bytes.
   * The slot among `maxConcurrent` is held until the stream ends, fails or is returned early.
   */
  exportStates(selection: ExportSelection): Promise<AsyncIterable<Uint8Array>>;
}
