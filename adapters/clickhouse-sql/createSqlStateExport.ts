/**
 * The state export port (engine/ports/stateExport.ts) over a SqlExecutor that streams: the
 * selection checked, the SQL of stateExportSql.ts, at most `maxConcurrent` exports at once, each
 * holding its slot until its stream ends, fails or is returned early.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { EXPORT_FORMATS, MAX_EXPORT_ASSETS, MAX_EXPORT_DEVICES, type ExportFormat, type ExportSelection, type StateExport } from '../../engine/ports/stateExport.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { CSV_HEADER, ENGINE_FORMAT, exportSql, literalBinder, parameterBinder } from './stateExportSql.ts';
import type { StateTableNames } from './stateTable.ts';

export interface SqlStateExportOptions {
  /** Exports running at once in this process; one more fails BACKPRESSURE (503, Retry-After). Default 4. */
  maxConcurrent?: number;
  /** Whether the engine writes Parquet (asked once, when first needed). */
  parquet(): Promise<boolean>;
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export function createSqlStateExport(executor: SqlExecutor, names: StateTableNames, options: SqlStateExportOptions): StateExport {
  const maxConcurrent = options.maxConcurrent ?? 4;
  let running = 0;
  let formats: Promise<readonly ExportFormat[]> | undefined;

  function exportFormats(): Promise<readonly ExportFormat[]> {
    if (executor.stream === undefined) return Promise.resolve([]);
    formats ??= options.parquet().then(
      (parquet) => EXPORT_FORMATS.filter((f) => f !== 'parquet' || parquet),
      (error: unknown) => {
        formats = undefined;
        throw error;
      },
    );
    return formats;
  }

  return {
    exportFormats,
    async exportStates(selection) {
      checkSelection(selection);
      const allowed = await exportFormats();
      if (!allowed.includes(selection.format)) {
        throw new FleetError('NOT_ACCEPTABLE', `this store does not write ${selection.format}`, { detail: { allowed: [...allowed] } });
      }
      if (running >= maxConcurrent) {
        throw new FleetError('BACKPRESSURE', `${maxConcurrent} exports are running; try again shortly`, { detail: { retryAfter: 5 } });
      }
      running++;
      let held = true;
      // Once: a stream that failed to start and one whose reader left both pass here.
      const release = (): void => {
        if (held) running--;
        held = false;
      };
      try {
        const controller = new AbortController();
        const signal = selection.signal === undefined ? controller.signal : AbortSignal.any([controller.signal, selection.signal]);
        const binder = executor.bindsParameters === true ? parameterBinder() : undefined;
        const sql = exportSql(names, selection, binder ?? literalBinder);
        const chunks = await executor.stream!(sql, ENGINE_FORMAT[selection.format], binder?.params, signal);
        return releasing(chunks, release, controller, selection.format === 'csv' ? Buffer.from(CSV_HEADER) : undefined);
      } catch (error) {
        release();
        throw error;
      }
    },
  };
}

/**
 * The chunks after `head`, the slot released (and the query stopped) however the reader leaves
 * them: at their end, on an error, or returning early — also before its first read, which a
 * generator's `finally` would miss.
 */
function releasing(chunks: AsyncIterable<Uint8Array>, release: () => void, controller: AbortController, head: Buffer | undefined): AsyncIterable<Uint8Array> {
  const engine = chunks[Symbol.asyncIterator]();
  let first = head;
  let done = false;
  const stop = async (): Promise<void> => {
    if (done) return;
    done = true;
    controller.abort();
    try {
      await engine.return?.();
    } finally {
      release();
    }
  };
  const iterator: AsyncIterator<Uint8Array> = {
    async next() {
      if (done) return { done: true, value: undefined };
      if (first !== undefined) {
        const value = first;
        first = undefined;
        return { done: false, value };
      }
      let result: IteratorResult<Uint8Array>;
      try {
        result = await engine.next();
      } catch (error) {
        await stop().catch(() => undefined);
        throw error;
      }
      if (result.done) {
        done = true;
        release();
      }
      return result;
    },
    async return() {
      await stop();
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

function checkSelection(s: ExportSelection): void {
  const invalid = (field: string, message: string) => new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { errors: [{ path: field, message }] } });
  if (!EXPORT_FORMATS.includes(s.format)) throw invalid('format', `one of ${EXPORT_FORMATS.join(', ')}`);
  if (!Array.isArray(s.devices) || s.devices.length === 0 || s.devices.length > MAX_EXPORT_DEVICES) throw invalid('devices', `1 to ${MAX_EXPORT_DEVICES} device ids`);
  if (!s.devices.every((d) => typeof d === 'string' && NAME.test(d))) throw invalid('devices', 'not device ids');
  if (s.assets !== undefined) {
    if (!Array.isArray(s.assets) || s.assets.length === 0 || s.assets.length > MAX_EXPORT_ASSETS) throw invalid('assets', `1 to ${MAX_EXPORT_ASSETS} asset names`);
    if (!s.assets.every((a) => typeof a === 'string' && NAME.test(a))) throw invalid('assets', 'not asset names');
  }
  for (const field of ['from', 'to'] as const) {
    const t = s[field];
    if (t !== undefined && (!Number.isSafeInteger(t) || t < 0)) throw invalid(field, 'not a time (epoch ms from 1970)');
  }
  if (s.from !== undefined && s.to !== undefined && s.from >= s.to) throw invalid('from', 'must be before `to`');
}
