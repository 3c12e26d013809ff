/**
 * The state store port's query rules (engine/ports/store.ts), checked before any SQL is written:
 * each failure is VALIDATION_FAILED naming the field. A query that can hold no row checks to
 * undefined, and the store answers [] without asking the engine.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { AggregateQuery, HistoryQuery, Resolution } from '../../engine/ports/store.ts';
import { RESOLUTION_MS, type HistorySqlInput } from './stateQueries.ts';

export interface StateQueryLimits {
  /** History limit of a query that names none. */
  defaultLimit: number;
  /** Largest history limit accepted. */
  maxLimit: number;
  /** Largest aggregate range accepted, in buckets of the requested resolution. */
  maxBuckets: number;
}

export interface CheckedAggregate {
  deviceId: string;
  asset: string;
  from: number;
  to: number;
  resolution: Resolution;
  /** The resolution's bucket size, epoch ms. */
  resolutionMs: number;
}

export function checkHistoryQuery(query: HistoryQuery, limits: StateQueryLimits): HistorySqlInput | undefined {
  checkString(query?.deviceId, 'deviceId');
  checkString(query.asset, 'asset');
  const from = optionalTime(query.from, 'from');
  const to = optionalTime(query.to, 'to');
  const limit = query.limit ?? limits.defaultLimit;
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > limits.maxLimit) {
    throw badQuery(`limit must be an integer from 0 to ${limits.maxLimit}`, 'limit');
  }
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw badQuery("order must be 'asc' or 'desc'", 'order');
  if (limit === 0 || (from !== undefined && to !== undefined && from >= to)) return undefined;
  return { deviceId: query.deviceId, asset: query.asset, from, to, limit, order };
}

export function checkAggregateQuery(query: AggregateQuery, limits: Pick<StateQueryLimits, 'maxBuckets'>): CheckedAggregate | undefined {
  checkString(query?.deviceId, 'deviceId');
  checkString(query.asset, 'asset');
  const from = optionalTime(query.from, 'from');
  const to = optionalTime(query.to, 'to');
  if (from === undefined || to === undefined) throw badQuery('from and to are required', from === undefined ? 'from' : 'to');
  const size = Object.hasOwn(RESOLUTION_MS, query.resolution) ? RESOLUTION_MS[query.resolution] : undefined;
  if (size === undefined) throw badQuery("resolution must be 'minute', 'hour' or 'day'", 'resolution');
  if (from >= to) return undefined;
  if ((to - from) / size > limits.maxBuckets) throw badQuery(`range spans more than ${limits.maxBuckets} ${query.resolution} buckets`, 'to');
  return { deviceId: query.deviceId, asset: query.asset, from, to, resolution: query.resolution, resolutionMs: size };
}

export function checkString(value: unknown, field: string): void {
  if (typeof value !== 'string') throw badQuery(`${field} must be a string`, field);
}

function badQuery(message: string, field: string): FleetError {
  return new FleetError('VALIDATION_FAILED', message, { detail: { field } });
}

function optionalTime(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw badQuery(`${field} must be an integer epoch ms`, field);
  return value;
}
