/**
 * State reads (AllThingsTalk habits, DESIGN.md §5): latest value per asset, the latest state of one
 * asset (`{id, state: {value, at}}`, as the SDKs read it), history with keyset paging, aggregates per
 * minute/hour/day, and a device's recent rejections so a maker can see why a value was dropped.
 */
import type { Context } from 'hono';
import Type from 'typebox';
import type { Asset, DeviceWithAssets } from '../../../../engine/ports/registry.ts';
import type { Resolution, StoredState } from '../../../../engine/ports/store.ts';
import {
  AggregatePage,
  AssetIdParams,
  AssetStateOut,
  DeviceAssetParams,
  DeviceParams,
  DeviceStateOut,
  HistoryPage,
  HistoryQuery,
  RejectionList,
  RejectionsQuery,
} from '../../../../schemas/edge.ts';
import { Channel } from '../../../../schemas/messages.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { historyPage } from './historyPage.ts';
import { invalidField, queryTime } from '../../request/check.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['states'];

const BUCKET_MS: Record<Resolution, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** Window when `from` is not given: 1 hour of minutes, 7 days of hours, 90 days of days. */
const DEFAULT_SPAN_MS: Record<Resolution, number> = { minute: 3_600_000, hour: 7 * 86_400_000, day: 90 * 86_400_000 };
const MAX_BUCKETS = 10_000;
const DEFAULT_LIMIT = 100;
/** What /rejections lists by default: why a value was dropped, on any uplink channel (not refused commands). */
const UPLINK_CHANNELS: readonly string[] = Channel.anyOf.map((literal) => literal.const);

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function stateValue(s: StoredState): { value: unknown; at: string } {
  return { value: s.value, at: iso(s.ts) };
}

export function stateRoutes(edge: EdgeContext): void {
  const { router, access, deps } = edge;

  router.route({
    methods: ['get'],
    path: '/device/{id}/state',
    operationId: 'getDeviceState',
    summary: 'Latest value and measurement time of every asset of a device',
    tags: TAGS,
    params: DeviceParams,
    responses: { 200: { description: 'asset name → latest state', content: { [JSON_TYPE]: DeviceStateOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'read');
    const names = new Set(device.assets.map((a) => a.name));
    const out: Record<string, { value: unknown; at: string }> = {};
    // States of assets deleted since are not shown.
    for (const s of await deps.store.latest(device.id)) if (names.has(s.asset)) out[s.asset] = stateValue(s);
    return c.json(out);
  });

  const latestOf = async (c: Context, device: DeviceWithAssets, asset: Asset): Promise<Response> => {
    const [last] = await deps.store.history({ deviceId: device.id, asset: asset.name, limit: 1, order: 'desc' });
    return c.json({ id: asset.id, state: last === undefined ? null : stateValue(last) });
  };

  const latestResponse = { 200: { description: 'the latest state, null before the first', content: { [JSON_TYPE]: AssetStateOut } } };

  router.route({
    methods: ['get'],
    path: '/device/{id}/asset/{name}/state',
    operationId: 'getDeviceAssetState',
    summary: 'Latest state of an asset by device and name',
    tags: TAGS,
    params: DeviceAssetParams,
    responses: latestResponse,
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'read');
    return latestOf(c, device, assetOf(device, params.name));
  });

  router.route({
    methods: ['get'],
    path: '/asset/{assetId}/state',
    operationId: 'getAssetState',
    summary: 'Latest state of an asset by global asset id',
    tags: TAGS,
    params: AssetIdParams,
    responses: latestResponse,
    errors: [404],
  }, async (c, { principal, params }) => {
    const { device, asset } = await access.asset(principal, params.assetId, 'read');
    return latestOf(c, device, asset);
  });

  const history = async (c: Context, deviceId: string, asset: string, q: HistoryQuery): Promise<Response> => {
    let from = queryTime(q.from, 'from');
    let to = queryTime(q.to, 'to');
    if (from !== undefined && to !== undefined && from >= to) throw invalidField('query.from', 'must be before `to`');
    if (q.resolution !== undefined) {
      for (const field of ['cursor', 'limit', 'order'] as const) {
        if (q[field] !== undefined) throw invalidField(`query.${field}`, 'applies to history, not to aggregates (`resolution`)');
      }
      const bucket = BUCKET_MS[q.resolution];
      to ??= deps.clock.now();
      from ??= to - DEFAULT_SPAN_MS[q.resolution];
      if (from >= to) throw invalidField('query.from', 'must be before `to`');
      if ((to - from) / bucket > MAX_BUCKETS) throw invalidField('query.from', `at most ${MAX_BUCKETS} ${q.resolution} buckets per request`);
      const buckets = await deps.store.aggregate({ deviceId, asset, from, to, resolution: q.resolution });
      return c.json({
        resolution: q.resolution,
        from: iso(from),
        to: iso(to),
        items: buckets.map((b) => ({ at: iso(b.start), count: b.count, min: b.min, max: b.max, avg: b.avg })),
      });
    }
    const page = await historyPage(deps.store, {
      deviceId, asset, from, to, limit: q.limit ?? DEFAULT_LIMIT, order: q.order ?? 'desc', cursor: q.cursor,
    });
    const body: { items: { value: unknown; at: string }[]; next?: string } = { items: page.items.map(stateValue) };
    if (page.next !== undefined) body.next = page.next;
    return c.json(body);
  };

  const historyResponses = {
    200: {
      description: 'a page of states; with `resolution`, buckets (count, and min/max/avg over numeric values)',
      content: { [JSON_TYPE]: Type.Union([HistoryPage, AggregatePage]) },
    },
  };
  const historyDescription = 'Newest first by default; `next` is the cursor of the following page. With `resolution` '
    + '(minute, hour or day) the answer is aggregates over [from, to) instead (default window: 1 hour, 7 days, 90 days).';

  router.route({
    methods: ['get'],
    path: '/device/{id}/asset/{name}/states',
    operationId: 'getDeviceAssetStates',
    summary: 'History of an asset by device and name, or its aggregates',
    description: historyDescription,
    tags: TAGS,
    params: DeviceAssetParams,
    query: HistoryQuery,
    responses: historyResponses,
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const device = await access.device(principal, params.id, 'read');
    return history(c, device.id, assetOf(device, params.name).name, query);
  });

  router.route({
    methods: ['get'],
    path: '/asset/{assetId}/states',
    operationId: 'getAssetStates',
    summary: 'History of an asset by global asset id, or its aggregates',
    description: historyDescription,
    tags: TAGS,
    params: AssetIdParams,
    query: HistoryQuery,
    responses: historyResponses,
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const { device, asset } = await access.asset(principal, params.assetId, 'read');
    return history(c, device.id, asset.name, query);
  });

  router.route({
    methods: ['get'],
    path: '/device/{id}/rejections',
    operationId: 'getDeviceRejections',
    summary: 'Recent rejections of a device, newest first: why a value was dropped',
    description: 'Uplink refusals of every channel by default; `channel=command` lists the refused command records instead, '
      + 'so that neither pushes the other out of the list.',
    tags: TAGS,
    params: DeviceParams,
    query: RejectionsQuery,
    responses: { 200: { description: 'the rejections', content: { [JSON_TYPE]: RejectionList } } },
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const device = await access.device(principal, params.id, 'read');
    const rows = await deps.rejections.recent(device.id, {
      limit: query.limit ?? DEFAULT_LIMIT, before: queryTime(query.before, 'before'), channels: query.channel === undefined ? UPLINK_CHANNELS : [query.channel],
    });
    return c.json({
      items: rows.map((r) => {
        const item: Record<string, unknown> = { at: iso(r.rejectedAt), code: r.code, reason: r.reason, uplinkId: r.uplinkId, channel: r.channel };
        if (r.asset !== '') item.asset = r.asset;
        if (r.item !== undefined) item.item = r.item;
        return item;
      }),
    });
  });
}
