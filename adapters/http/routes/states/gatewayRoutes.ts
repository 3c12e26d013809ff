/**
 * A gateway's states for several devices of its ground in one request (ThingsBoard's gateway API is
 * the model; AllThingsTalk has none): `POST /ground/{groundId}/states` with device id → device state
 * or batch. The gateway is a member's user token or the device token of a device of that ground.
 * Each device's part goes through the one admission step as that device's own uplink and is
 * answered on its own: accepted (durable), refused (recorded in that device's rejections) or
 * unavailable (retry it). A device outside the ground is refused as unknown, and nothing is recorded
 * for it: a gateway cannot write into another ground's rejections.
 */
import { FleetError, toFleetError } from '../../../../engine/kernel/errors.ts';
import { isPlainObject } from '../../../../engine/kernel/isPlainObject.ts';
import { GatewayResults, GatewayStatesBody, GroundParams } from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { readJsonBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
/** Devices one gateway request may name. */
export const MAX_GATEWAY_DEVICES = 1000;

type Result = GatewayResults['results'][number];

export function gatewayRoutes(edge: EdgeContext): void {
  const { router, access, deps } = edge;
  const encoder = new TextEncoder();

  router.route({
    methods: ['post'],
    path: '/ground/{groundId}/states',
    operationId: 'postGatewayStates',
    audit: false,
    summary: 'States of several devices of a ground in one request (a gateway), each admitted on its own',
    tags: ['states'],
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: GatewayStatesBody } },
    responses: { 202: { description: 'one result per device, in request order', content: { [JSON_TYPE]: GatewayResults } } },
    errors: [400, 403, 404, 413, 415, 422, 503],
  }, async (c, { principal, params }) => {
    await access.gateway(principal, params.groundId);
    const body = await readJsonBody(c.req.raw, edge.maxBodyBytes);
    if (!isPlainObject(body)) throw new FleetError('INVALID_STATE', 'body must be a JSON object of device id → device state (or an array of device states)');
    const ids = Object.keys(body);
    if (ids.length > MAX_GATEWAY_DEVICES) throw new FleetError('PAYLOAD_TOO_LARGE', `a gateway request names at most ${MAX_GATEWAY_DEVICES} devices, not ${ids.length}`);
    const results = await Promise.all(ids.map(async (deviceId): Promise<Result> => {
      const device = await access.deviceInGround(params.groundId, deviceId);
      if (device === undefined) return { deviceId, status: 'refused', code: 'UNKNOWN_DEVICE', reason: `no device ${JSON.stringify(deviceId.slice(0, 40))} in this ground` };
      try {
        const outcome = await deps.admission.admit(device, { channel: 'http', contentType: 'json', deviceId, body: encoder.encode(JSON.stringify(body[deviceId])) });
        if (outcome.status === 'refused') {
          const [first] = outcome.rejections;
          return { deviceId, status: 'refused', uplinkId: outcome.uplinkId, code: first.code, reason: first.reason };
        }
        const result: Result = { deviceId, status: 'accepted', uplinkId: outcome.uplinkId };
        if (outcome.dropped.length > 0) result.rejected = outcome.dropped.map((r) => ({ asset: r.asset, item: r.item, code: r.code, reason: r.reason }));
        return result;
      } catch (error) {
        const failure = toFleetError(error, 'UNAVAILABLE');
        // What a retry may cure is answered per device; anything else fails the request.
        if (!failure.retriable) throw failure;
        return { deviceId, status: 'unavailable', code: failure.code, reason: failure.message };
      }
    }));
    c.header('cache-control', 'no-store');
    return c.json({ results }, 202);
  });
}
