/**
 * Uplink (spec §4.1, §4.2): device states (JSON or CBOR) and asset states (JSON) from a device
 * token of that device or a user token of its ground. The edge keeps the channel's rules — 415
 * content type, 413 size, 404 unknown device or asset — and hands the body to the engine's one
 * admission step (engine/uplink/UplinkAdmission.ts), which decides once what it yields:
 *   refused  → 400 (MALFORMED_JSON/CBOR) or 422 (INVALID_STATE, PROFILE_VIOLATION, INVALID_AT, …),
 *              recorded under `GET /device/{id}/rejections` like a refusal from any channel;
 *   over the ground's states per second → 429 QUOTA_EXCEEDED with Retry-After;
 *   accepted → `202 Accepted` once durable in the log, listing entries that were `rejected` on
 *              their own; the engine stores exactly the states admitted here.
 * The spec does not name the method of the asset state paths, so PUT and POST are both taken.
 */
import type { Context } from 'hono';
import type { DeviceWithAssets } from '../../../../engine/ports/registry.ts';
import { FleetError, type ErrorCode } from '../../../../engine/kernel/errors.ts';
import { isoTime } from '../../../../engine/kernel/isoTime.ts';
import type { RefusedEntry } from '../../../../engine/ports/uplinkAdmission.ts';
import type { UplinkSubmission } from '../../../../engine/uplink/UplinkIngest.ts';
import { Accepted, AssetIdParams, AssetStateBody, DeviceAssetParams, DeviceParams, DeviceStateBody } from '../../../../schemas/edge.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { bodyFormat, incomingOf, readBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
const CBOR_TYPE = 'application/cbor';
const TAGS = ['states'];
const UPLINK_ERRORS = [400, 404, 413, 415, 422, 429, 503];
const ACCEPTED_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': JSON_TYPE, 'cache-control': 'no-store' });

/**
 * A refused uplink as a problem: the first entry's code and status, every entry under `errors`. Over
 * the ground's states per second: 429 QUOTA_EXCEEDED with Retry-After (docs/grounds.md "Quotas").
 */
function refusal(rejections: readonly RefusedEntry[], uplinkId: string, retryAfter: number | undefined): FleetError {
  const first = rejections[0];
  const errors = rejections.map((r) => ({ path: r.asset === undefined ? 'body' : `body.${r.asset}`, message: `${r.code}: ${r.reason}` }));
  const more = rejections.length > 1 ? ` (and ${rejections.length - 1} more)` : '';
  if (retryAfter !== undefined) return new FleetError(first.code as ErrorCode, first.reason, { status: 429, detail: { errors, uplinkId, retryAfter } });
  return new FleetError(first.code as ErrorCode, `${first.reason}${more}`, { detail: { errors, uplinkId } });
}

export function uplinkRoutes(edge: EdgeContext): void {
  const { router, access, deps } = edge;

  const accept = async (device: DeviceWithAssets, submission: UplinkSubmission): Promise<Response> => {
    const outcome = await deps.admission.admit(device, submission);
    // A refusal's problem+json carries no-store too (problemResponse.ts).
    if (outcome.status === 'refused') throw refusal(outcome.rejections, outcome.uplinkId, outcome.retryAfterSeconds);
    const body: Record<string, unknown> = { uplinkId: outcome.uplinkId, receivedAt: isoTime(outcome.receivedAt) };
    if (outcome.dropped.length > 0) body.rejected = outcome.dropped.map((r) => ({ asset: r.asset, item: r.item, code: r.code, reason: r.reason }));
    // The headers as a plain object, not through c.header()/c.json(): those make a Headers object that
    // the Node server then turns back into a plain one, on every uplink.
    return new Response(JSON.stringify(body), { status: 202, headers: ACCEPTED_HEADERS });
  };

  const acceptedResponse = { 202: { description: 'durable in the log; processed asynchronously', content: { [JSON_TYPE]: Accepted } } };

  router.route({
    methods: ['put', 'post'],
    path: '/device/{id}/state',
    operationId: 'putDeviceState',
    audit: false,
    summary: 'Device state (spec §4.2): JSON, or CBOR in the full or the simplified form',
    tags: TAGS,
    params: DeviceParams,
    body: { required: true, content: { [JSON_TYPE]: DeviceStateBody, [CBOR_TYPE]: DeviceStateBody } },
    responses: acceptedResponse,
    errors: UPLINK_ERRORS,
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'write');
    const format = bodyFormat(c.req.header('content-type'), ['json', 'cbor']);
    const body = await readBody(c.req.raw, edge.maxBodyBytes, incomingOf(c));
    return accept(device, { channel: 'http', contentType: format, deviceId: device.id, body });
  });

  const assetState = async (c: Context, device: DeviceWithAssets, asset: string): Promise<Response> => {
    bodyFormat(c.req.header('content-type'), ['json']);
    const body = await readBody(c.req.raw, edge.maxBodyBytes, incomingOf(c));
    return accept(device, { channel: 'http', contentType: 'json', deviceId: device.id, asset, body });
  };

  router.route({
    methods: ['put', 'post'],
    path: '/device/{id}/asset/{name}/state',
    operationId: 'putDeviceAssetState',
    audit: false,
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
    audit: false,
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
