/**
 * What a state store accepts (DESIGN.md §3 "State row"). Checked before rows are queued or encoded,
 * so a bad row fails its own append call with a clear error instead of poisoning a shared batch.
 */
import { FleetError } from '../../kernel/errors.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import { checkJsonValue } from '../../kernel/checkJsonValue.ts';

/** Largest StateRow.seq: the store keeps it as UInt16 (a batch holds at most 1000 items). */
export const MAX_SEQ = 65_535;

/**
 * Throws FleetError INVALID_STATE (not retriable) naming the first offending row and field.
 * Rules: ids are strings (device id and asset non-empty), `ts`/`receivedAt` safe integers (epoch ms),
 * `seq` absent or an integer from 0 to 65 535 (a UInt16 column), `value` a storable JSON value
 * (checkJsonValue.ts): NaN and ±Infinity, bigint, undefined, byte arrays, Maps, class instances and
 * nesting beyond the one limit are refused rather than stored as something else.
 */
export function checkStateRows(rows: readonly StateRow[]): void {
  if (!Array.isArray(rows)) throw invalid('rows must be an array', -1, 'rows');
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row === null || typeof row !== 'object') throw invalid('row is not an object', i, '');
    if (typeof row.deviceId !== 'string' || row.deviceId === '') throw invalid('deviceId must be a non-empty string', i, 'deviceId');
    if (typeof row.asset !== 'string' || row.asset === '') throw invalid('asset must be a non-empty string', i, 'asset');
    if (typeof row.uplinkId !== 'string' || row.uplinkId === '') throw invalid('uplinkId must be a non-empty string', i, 'uplinkId');
    if (!Number.isSafeInteger(row.ts)) throw invalid('ts must be an integer epoch ms', i, 'ts');
    if (!Number.isSafeInteger(row.receivedAt)) throw invalid('receivedAt must be an integer epoch ms', i, 'receivedAt');
    if (row.seq !== undefined && !(Number.isInteger(row.seq) && row.seq >= 0 && row.seq <= MAX_SEQ)) throw invalid(`seq must be an integer from 0 to ${MAX_SEQ}`, i, 'seq');
    const problem = checkJsonValue(row.value, 0);
    if (problem !== undefined) throw invalid(problem.reason, i, 'value');
  }
}

function invalid(message: string, index: number, field: string): FleetError {
  return new FleetError('INVALID_STATE', index < 0 ? message : `state row ${index}: ${message}`, {
    detail: { index, field },
  });
}
