/**
 * Uplink (spec §4.1, §4.2): device states (JSON or CBOR) and asset states (JSON) from a device
 * token of that device or a user token of its ground. What a client can get wrong is answered at
 * once — 415 content type, 413 size, 400 syntax, 404 unknown device or asset, 422 a message of the
 * wrong shape or a value its asset profile refuses (previewUplink.ts) — and only then is the raw
 * body appended to the log; `202 Accepted` means the uplink is durable there. The device actor
 * processes it again from the log and decides what is stored; what it drops is listed by
 * `GET /device/{id}/rejections`.
 * The spec does not name the method of the asset state paths, so PUT and POST are both taken.
 */
import type { Context } from 'hono';
import type { DeviceWithAssets } from '../../engine/ports/registry.ts';
import type { UplinkSubmission } from '../../engine/uplink/UplinkIngest.ts';
import { Accepted, AssetIdParams, AssetStateBody, DeviceAssetParams, DeviceParams, DeviceStateBody } from '../../schemas/edge.ts';
import { assetOf } from './EdgeAccess.ts';
import type { EdgeContext } from './EdgeDeps.ts';
import { previewUplink } from './previewUplink.ts';
import { readBody } from './readBody.ts';
import { bodyFormat } from './requestBody.ts';

const JSON_TYPE = 'application/json';
const CBOR_TYPE = 'application/cbor';
const TAGS = ['states'];
const UPLINK_ERRORS = [400, 404, 413, 415, 422, 503];

export function uplinkRoutes(edge: EdgeContext): void {
  const { router, access, deps } = edge;

  const accept = async (c: Context, device: DeviceWithAssets, submission: UplinkSubmission): Promise<Response> => {
    const dropped = previewUplink(device, submission, deps.clock.now());
    const receipt = await deps.ingest.append(submission);
    c.header('cache-control', 'no-store');
    const body: Record<string, unknown> = {};
    if (receipt) {
      body.uplinkId = receipt.id;
      body.receivedAt = new Date(receipt.receivedAt).toISOString();
    }
    if (dropped.length > 0) body.rejected = dropped.map((r) => ({ asset: r.asset, code: r.code, reason: r.reason }));
    return c.json(body, 202);
  };

  const acceptedResponse = { 202: { description: 'durable in the log; processed asynchronously', content: { [JSON_TYPE]: Accepted } } };

  router.route({
    methods: ['put', 'post'],
    path: '/device/{id}/state',
    operationId: 'putDeviceState',
    summary: 'Device state (spec §4.2): JSON, or CBOR in the full or the simplified form',
    tags: TAGS,
    params: DeviceParams,
    body: { required: true, content: { [JSON_TYPE]: DeviceStateBody, [CBOR_TYPE]: DeviceStateBody } },
    responses: acceptedResponse,
    errors: UPLINK_ERRORS,
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'write');
    const format = bodyFormat(c.req.header('content-type'), ['json', 'cbor']);
    const body = await readBody(c.req.raw, edge.maxBodyBytes);
    return accept(c, device, { channel: 'http', contentType: format, deviceId: device.id, body });
  });

  const assetState = async (c: Context, device: DeviceWithAssets, asset: string): Promise<Response> => {
    bodyFormat(c.req.header('content-type'), ['json']);
    const body = await readBody(c.req.raw, edge.maxBodyBytes);
    return accept(c, device, { channel: 'http', contentType: 'json', deviceId: device.id, asset, body });
  };

  router.route({
    methods: ['put', 'post'],
    path: '/device/{id}/asset/{name}/state',
    operationId: 'putDeviceAssetState',
    summary: 'Asset state by device and asset name (spec §4.1)',
    tags: TAGS,
    params: DeviceAssetParams,
    body: { required: true, content: { [JSON_TYPE]: AssetStateBody } },
    responses: acceptedResponse,
    errors: UPLINK_ERRORS,
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'write');
    const asset = assetOf(device, params.name);
    return assetState(c, device, asset.name);
  });

  router.route({
    methods: ['put', 'post'],
    path: '/asset/{assetId}/state',
    operationId: 'putAssetState',
    summary: 'Asset state by global asset id (spec §4.1)',
    tags: TAGS,
    params: AssetIdParams,
    body: { required: true, content: { [JSON_TYPE]: AssetStateBody } },
    responses: acceptedResponse,
    errors: UPLINK_ERRORS,
  }, async (c, { principal, params }) => {
    const { device, asset } = await access.asset(principal, params.assetId, 'write');
    return assetState(c, device, asset.name);
  });
}
