/**
 * ClickHouse exception codes (stable numbers, src/Common/ErrorCodes.cpp) to FleetError codes.
 * Shared by the chDB and server adapters: both engines report the same numbers. Anything not listed
 * is INTERNAL (not retriable): a query or data error that retrying will not mend.
 */
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';

interface Mapping {
  code: ErrorCode;
  retriable?: boolean;
}

const BY_CLICKHOUSE_CODE: ReadonlyMap<number, Mapping> = new Map<number, Mapping>([
  [159, { code: 'TIMEOUT' }], // TIMEOUT_EXCEEDED
  [209, { code: 'TIMEOUT' }], // SOCKET_TIMEOUT
  [210, { code: 'UNAVAILABLE' }], // NETWORK_ERROR
  [202, { code: 'UNAVAILABLE' }], // TOO_MANY_SIMULTANEOUS_QUERIES
  [241, { code: 'UNAVAILABLE' }], // MEMORY_LIMIT_EXCEEDED
  [242, { code: 'UNAVAILABLE' }], // TABLE_IS_READ_ONLY
  [243, { code: 'UNAVAILABLE' }], // NOT_ENOUGH_SPACE
  [236, { code: 'UNAVAILABLE' }], // ABORTED
  [394, { code: 'UNAVAILABLE' }], // QUERY_WAS_CANCELLED
  [425, { code: 'UNAVAILABLE' }], // SYSTEM_ERROR
  [252, { code: 'BACKPRESSURE' }], // TOO_MANY_PARTS: inserts outrun merges; slow down and retry
  // Misconfiguration: the store cannot serve, and retrying with the same credentials will not help.
  [192, { code: 'UNAVAILABLE', retriable: false }], // UNKNOWN_USER
  [193, { code: 'UNAVAILABLE', retriable: false }], // WRONG_PASSWORD
  [194, { code: 'UNAVAILABLE', retriable: false }], // REQUIRED_PASSWORD
  [195, { code: 'UNAVAILABLE', retriable: false }], // IP_ADDRESS_NOT_ALLOWED
  [164, { code: 'UNAVAILABLE', retriable: false }], // READONLY
  [497, { code: 'UNAVAILABLE', retriable: false }], // ACCESS_DENIED
  [516, { code: 'UNAVAILABLE', retriable: false }], // AUTHENTICATION_FAILED
]);

/**
 * Codes a server answers while it is going away: shutting down detaches databases and tables, so a
 * statement that found them a moment ago now fails "unknown table" (60), "unknown database" (81) or
 * "table is dropped" (218). At start the same codes mean a real misconfiguration, so they stay final
 * here; a store that has seen its tables (init succeeded) reads them as UNAVAILABLE, retriable
 * (retriableWhenReady.ts).
 */
export const GOING_AWAY_CODES: ReadonlySet<number> = new Set([60, 81, 218]);

export function fleetErrorFromClickHouseCode(clickhouseCode: number, message: string, cause: unknown): FleetError {
  const mapping = BY_CLICKHOUSE_CODE.get(clickhouseCode) ?? { code: 'INTERNAL' };
  return new FleetError(mapping.code, message, {
    cause,
    retriable: mapping.retriable,
    detail: { clickhouseCode },
  });
}

/**
 * The exception code at the head of a ClickHouse error text: "Code: 60, e.displayText() = …"
 * (18.16) or "Code: 60. DB::Exception: …" (current). This is the wire format of the code, not a
 * message match: older servers send no X-ClickHouse-Exception-Code header and no "(NAME)" suffix.
 */
export function clickhouseCodeOf(text: string): number | undefined {
  const match = /^\s*Code: (\d+)[.,]/.exec(text);
  return match ? Number(match[1]) : undefined;
}
