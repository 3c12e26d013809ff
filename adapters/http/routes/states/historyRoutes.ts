/**
 * State history (AllThingsTalk habits, DESIGN.md §5): the states of one asset with keyset paging
 * (historyPage.ts), or with `resolution` their aggregates per minute, hour or day over [from, to).
 * With `format` (csv, ndjson, parquet) or an `Accept` naming one of those, the states of [from, to)
 * as a file instead (exportRoutes.ts); without, the JSON answers stay exactly as they were.
 */
import type { Context } from 'hono';
import Type from 'typebox';
import { isoTime } from '../../../../engine/kernel/isoTime.ts';
import type { Resolution } from '../../../../engine/ports/store.ts';
import { AggregatePage, AssetIdParams, DeviceAssetParams, HistoryPage, HistoryQuery } from '../../../../schemas/edge.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { invalidField, queryTime } from '../../request/check.ts';
import { historyPage } from './historyPage.ts';
import { stateValue } from './stateRoutes.ts';
import { chooseFormat, EXPORT_MEDIA_TYPES } from './exportFormat.ts';
import { exportResponse } from './exportRoutes.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['states'];

const BUCKET_MS: Record<Resolution, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** Window when `from` is not given: 1 hour of minutes, 7 days of hours, 90 days of days. */
const DEFAULT_SPAN_MS: Record<Resolution, number> = { minute: 3_600_000, hour: 7 * 86_400_000, day: 90 * 86_400_000 };
const MAX_BUCKETS = 10_000;
const DEFAULT_LIMIT = 100;

const HISTORY_RESPONSES = {
  200: {
    description: 'a page of states; with `resolution`, buckets (count, and min/max/avg over numeric values)',
    content: {
      [JSON_TYPE]: Type.Union([HistoryPage, AggregatePage]),
      [EXPORT_MEDIA_TYPES.csv]: Type.String(),
      [EXPORT_MEDIA_TYPES.ndjson]: Type.String(),
      [EXPORT_MEDIA_TYPES.parquet]: Type.String({ format: 'binary' }),
    },
  },
};
const HISTORY_DESCRIPTION = 'Newest first by default; `next` is the cursor of the following page. With `resolution` '
  + '(minute, hour or day) the answer is aggregates over [from, to) instead (default window: 1 hour, 7 days, 90 days). '
  + 'With `format` csv, ndjson or parquet (or `Accept: text/csv`, `application/x-ndjson`, `application/vnd.apache.parquet`) '
  + 'every state of [from, to) as a file, in no promised order (docs/analytics.md "Export").';

export function historyRoutes(edge: EdgeContext): void {
  historyByName(edge);
  historyById(edge);
}

function historyByName(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/device/{id}/asset/{name}/states',
    operationId: 'getDeviceAssetStates',
    summary: 'History of an asset by device and name, or its aggregates',
    description: HISTORY_DESCRIPTION,
    tags: TAGS,
    params: DeviceAssetParams,
    query: HistoryQuery,
    responses: HISTORY_RESPONSES,
    errors: [404, 406, 503],
  }, async (c, { principal, params, query }) => {
    const device = await edge.access.device(principal, params.id, 'read');
    return history(edge, c, device.id, assetOf(device, params.name).name, query);
  });
}

function historyById(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/asset/{assetId}/states',
    operationId: 'getAssetStates',
    summary: 'History of an asset by global asset id, or its aggregates',
    description: HISTORY_DESCRIPTION,
    tags: TAGS,
    params: AssetIdParams,
    query: HistoryQuery,
    responses: HISTORY_RESPONSES,
    errors: [404, 406, 503],
  }, async (c, { principal, params, query }) => {
    const { device, asset } = await edge.access.asset(principal, params.assetId, 'read');
    return history(edge, c, device.id, asset.name, query);
  });
}

async function history(edge: EdgeContext, c: Context, deviceId: string, asset: string, q: HistoryQuery): Promise<Response> {
  const from = queryTime(q.from, 'from');
  const to = queryTime(q.to, 'to');
  if (from !== undefined && to !== undefined && from >= to) throw invalidField('query.from', 'must be before `to`');
  const format = chooseFormat(q.format, c.req.header('accept'), 'json', false);
  if (format !== 'json') {
    for (const field of ['cursor', 'limit', 'order', 'resolution'] as const) {
      if (q[field] !== undefined) throw invalidField(`query.${field}`, 'applies to the JSON history, not to an export (`format`)');
    }
    return exportResponse(edge, c.req.raw, { devices: [deviceId], assets: [asset], from, to, format }, `${deviceId}-${asset}`);
  }
  if (q.resolution !== undefined) return aggregates(edge, c, { deviceId, asset, from, to, resolution: q.resolution }, q);
  const page = await historyPage(edge.deps.store, {
    deviceId, asset, from, to, limit: q.limit ?? DEFAULT_LIMIT, order: q.order ?? 'desc', cursor: q.cursor,
  });
  const body: { items: { value: unknown; at: string }[]; next?: string } = { items: page.items.map(stateValue) };
  if (page.next !== undefined) body.next = page.next;
  return c.json(body);
}

/** The asset and window of an aggregates request (from, to: given in the query, if at all). */
interface Span {
  deviceId: string;
  asset: string;
  from: number | undefined;
  to: number | undefined;
  resolution: Resolution;
}

async function aggregates(edge: EdgeContext, c: Context, span: Span, q: HistoryQuery): Promise<Response> {
  for (const field of ['cursor', 'limit', 'order'] as const) {
    if (q[field] !== undefined) throw invalidField(`query.${field}`, 'applies to history, not to aggregates (`resolution`)');
  }
  const { resolution } = span;
  const bucket = BUCKET_MS[resolution];
  const to = span.to ?? edge.deps.clock.now();
  const from = span.from ?? to - DEFAULT_SPAN_MS[resolution];
  if (from >= to) throw invalidField('query.from', 'must be before `to`');
  if ((to - from) / bucket > MAX_BUCKETS) throw invalidField('query.from', `at most ${MAX_BUCKETS} ${resolution} buckets per request`);
  const buckets = await edge.deps.store.aggregate({ deviceId: span.deviceId, asset: span.asset, from, to, resolution });
  return c.json({
    resolution,
    from: isoTime(from),
    to: isoTime(to),
    items: buckets.map((b) => ({ at: isoTime(b.start), count: b.count, min: b.min, max: b.max, avg: b.avg })),
  });
}
