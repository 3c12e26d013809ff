/**
 * Latest states (AllThingsTalk habits, DESIGN.md §5): the latest value of every asset of a device,
 * and the latest state of one asset (`{id, state: {value, at}}`, as the SDKs read it). History and
 * aggregates are historyRoutes.ts's, rejections rejectionRoutes.ts's.
 */
import type { Context } from 'hono';
import { isoTime } from '../../../../engine/kernel/isoTime.ts';
import type { Asset, DeviceWithAssets } from '../../../../engine/ports/registry.ts';
import type { StoredState } from '../../../../engine/ports/store.ts';
import { AssetIdParams, AssetStateOut, DeviceAssetParams, DeviceParams, DeviceStateOut } from '../../../../schemas/edge.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['states'];
const LATEST_RESPONSE = { 200: { description: 'the latest state, null before the first', content: { [JSON_TYPE]: AssetStateOut } } };

/** A stored state as the API answers it. */
export function stateValue(s: StoredState): { value: unknown; at: string } {
  return { value: s.value, at: isoTime(s.ts) };
}

export function stateRoutes(edge: EdgeContext): void {
  deviceState(edge);
  assetStateByName(edge);
  assetStateById(edge);
}

function deviceState({ router, access, deps }: EdgeContext): void {
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
}

async function latestOf(edge: EdgeContext, c: Context, device: DeviceWithAssets, asset: Asset): Promise<Response> {
  const [last] = await edge.deps.store.history({ deviceId: device.id, asset: asset.name, limit: 1, order: 'desc' });
  return c.json({ id: asset.id, state: last === undefined ? null : stateValue(last) });
}

function assetStateByName(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/device/{id}/asset/{name}/state',
    operationId: 'getDeviceAssetState',
    summary: 'Latest state of an asset by device and name',
    tags: TAGS,
    params: DeviceAssetParams,
    responses: LATEST_RESPONSE,
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'read');
    return latestOf(edge, c, device, assetOf(device, params.name));
  });
}

function assetStateById(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/asset/{assetId}/state',
    operationId: 'getAssetState',
    summary: 'Latest state of an asset by global asset id',
    tags: TAGS,
    params: AssetIdParams,
    responses: LATEST_RESPONSE,
    errors: [404],
  }, async (c, { principal, params }) => {
    const { device, asset } = await edge.access.asset(principal, params.assetId, 'read');
    return latestOf(edge, c, device, asset);
  });
}
