/**
 * Commands over HTTP (spec §4.3, §4.4): a user token of the device's ground issues
 *   PUT /device/{id}/asset/{name}/command   {value, at?}   asset command (MQTT)
 *   PUT /asset/{assetId}/command            {value, at?}   asset command (MQTT)
 *   PUT /device/{id}/command                {asset: value} device command (LPWAN)
 * An asset command to a device on a LoRaWAN network goes out as a device command holding that one
 * asset (spec §4.4; engine/commands/lpwanNetworkOf.ts). The asset must be an actuator (422
 * NOT_ACTUATOR) and the value fit its profile (422 PROFILE_VIOLATION); a command to a LoRaWAN device
 * must also be able to leave: its network takes downlinks (501 NO_DOWNLINK) and its device type
 * encodes it (422 VALIDATION_FAILED), so that a 202 is not followed by a certain failure. A command
 * the device's queue has no room for is refused too, 429 COMMAND_QUEUE_FULL with Retry-After, where
 * the edge can know (embedded: its own actors read every command); where it cannot (Kafka), the
 * command is listed as `failed` with that code. Then the command record is appended to topic
 * `commands` and `202` returns its id. `GET /device/{id}/commands` lists the device's commands from the command history, newest
 * first, each with its lifecycle (from/to select by the time a command was queued, like state
 * history selects by measurement time).
 */
import type { Context } from 'hono';
import Type from 'typebox';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { actorOf, actsByRole } from '../../../../engine/access/groundRoles.ts';
import { newId } from '../../../../engine/kernel/ids.ts';
import { checkDownlink, validateAssetCommand, validateDeviceCommand } from '../../../../engine/commands/validateCommand.ts';
import { acceptanceOf, type CommandAcceptance } from '../../../../engine/commands/commandRecords.ts';
import type { CommandHistoryQuery } from '../../../../engine/ports/commandHistory.ts';
import type { Principal } from '../../../../engine/ports/registry.ts';
import { CommandLifecycle, type CommandRecord } from '../../../../schemas/commands.ts';
import { AssetIdParams, DeviceAssetParams, DeviceParams, TimeParam } from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { isPlainObject } from '../../../../engine/kernel/isPlainObject.ts';
import { invalidField, queryTime } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';

export interface EdgeCommands {
  /**
   * Appends the record to topic `commands` with the edge's decision on it (engine/commands/
   * commandRecords.ts); resolves once durable. COMMAND_QUEUE_FULL when its device's queue is known to be full.
   */
  append(record: CommandRecord, accepted: CommandAcceptance): Promise<void>;
  /** Commands of a device with their lifecycles, newest first (engine/ports/commandHistory.ts). */
  list(query: CommandHistoryQuery): Promise<CommandLifecycle[]>;
}

const JSON_TYPE = 'application/json';
const TAGS = ['commands'];
const AssetCommandBody = Type.Object({ value: Type.Unknown(), at: Type.Optional(Type.String()) });
const DeviceCommandBody = Type.Record(Type.String(), Type.Unknown());
const CommandAccepted = Type.Object({ id: Type.String() });
const CommandList = Type.Object({ items: Type.Array(CommandLifecycle) });
const CommandsQuery = Type.Object({
  from: Type.Optional(TimeParam),
  to: Type.Optional(TimeParam),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'default 100' })),
}, { additionalProperties: false });
const DEFAULT_LIMIT = 100;

function userOnly(principal: Principal): void {
  if (!actsByRole(principal)) throw new FleetError('FORBIDDEN', 'commands are issued with a user token or an API key of the device\'s ground');
}

function checkAt(at: unknown): string | undefined {
  if (at === undefined) return undefined;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at))) throw new FleetError('INVALID_AT', '`at` must be an ISO 8601 timestamp string');
  return at;
}

export function commandRoutes(edge: EdgeContext, commands: EdgeCommands): void {
  const { router, access, deps } = edge;
  const accepted = { 202: { description: 'durable on topic `commands`; delivered asynchronously', content: { [JSON_TYPE]: CommandAccepted } } };

  type Issued = Omit<CommandRecord, 'id' | 'issuer' | 'issuedAt'>;
  const issue = async (c: Context, principal: Principal, record: Issued, accepted: CommandAcceptance): Promise<Response> => {
    const id = newId();
    await commands.append({ ...record, id, issuer: actorOf(principal), issuedAt: deps.clock.now() }, accepted);
    c.header('cache-control', 'no-store');
    return c.json({ id }, 202);
  };

  const assetCommand = async (c: Context, principal: Principal, deviceId: string, assetName: string): Promise<Response> => {
    const device = await access.device(principal, deviceId, 'write');
    const body = await readJsonBody(c.req.raw, edge.maxBodyBytes);
    if (!isPlainObject(body) || !Object.hasOwn(body, 'value')) throw new FleetError('VALIDATION_FAILED', 'an asset command is a JSON object {value, at?}');
    const at = checkAt(body.at);
    const ok = validateAssetCommand(device, assetName, body.value);
    if (!ok.ok) throw new FleetError(ok.code, ok.reason);
    const leaves = checkDownlink(device, { [assetName]: body.value }, assetName);
    if (!leaves.ok) throw new FleetError(leaves.code, leaves.reason);
    return issue(c, principal, { deviceId, asset: assetName, value: body.value, ...(at === undefined ? {} : { at }) }, acceptanceOf(device, ok.value));
  };

  router.route({
    methods: ['put', 'post'], path: '/device/{id}/asset/{name}/command', operationId: 'putDeviceAssetCommand',
    summary: 'Asset command (spec §4.3), delivered over MQTT; to a device on a LoRaWAN network, as a device command over it (spec §4.4)', tags: TAGS, params: DeviceAssetParams,
    body: { required: true, content: { [JSON_TYPE]: AssetCommandBody } }, responses: accepted, errors: [400, 404, 413, 415, 422, 429, 501, 503],
  }, async (c, { principal, params }) => {
    userOnly(principal);
    return assetCommand(c, principal, params.id, params.name);
  });

  router.route({
    methods: ['put', 'post'], path: '/asset/{assetId}/command', operationId: 'putAssetCommand',
    summary: 'Asset command by asset id (spec §4.3), delivered as the one above', tags: TAGS, params: AssetIdParams,
    body: { required: true, content: { [JSON_TYPE]: AssetCommandBody } }, responses: accepted, errors: [400, 404, 413, 415, 422, 429, 501, 503],
  }, async (c, { principal, params }) => {
    userOnly(principal);
    const { device, asset } = await access.asset(principal, params.assetId, 'write');
    return assetCommand(c, principal, device.id, asset.name);
  });

  router.route({
    methods: ['put', 'post'], path: '/device/{id}/command', operationId: 'putDeviceCommand',
    summary: 'Device command (spec §4.4): asset name → value, delivered over LPWAN', tags: TAGS, params: DeviceParams,
    body: { required: true, content: { [JSON_TYPE]: DeviceCommandBody } }, responses: accepted, errors: [400, 404, 413, 415, 422, 429, 501, 503],
  }, async (c, { principal, params }) => {
    userOnly(principal);
    const device = await access.device(principal, params.id, 'write');
    const body = await readJsonBody(c.req.raw, edge.maxBodyBytes);
    if (!isPlainObject(body)) throw new FleetError('VALIDATION_FAILED', 'a device command is a JSON object: asset name → value');
    const ok = validateDeviceCommand(device, body);
    if (!ok.ok) throw new FleetError(ok.code, ok.reason);
    const leaves = checkDownlink(device, body);
    if (!leaves.ok) throw new FleetError(leaves.code, leaves.reason);
    return issue(c, principal, { deviceId: device.id, assets: body }, acceptanceOf(device));
  });

  router.route({
    methods: ['get'], path: '/device/{id}/commands', operationId: 'listDeviceCommands',
    summary: 'Commands of a device with their lifecycles, newest first',
    description: '`from` (inclusive) and `to` (exclusive) select by the time a command was queued; each item lists its status changes oldest first.',
    tags: TAGS, params: DeviceParams, query: CommandsQuery,
    responses: { 200: { description: 'commands', content: { [JSON_TYPE]: CommandList } } }, errors: [404],
  }, async (c, { principal, params, query }) => {
    const device = await access.device(principal, params.id, 'read');
    const from = queryTime(query.from, 'from');
    const to = queryTime(query.to, 'to');
    if (from !== undefined && to !== undefined && from >= to) throw invalidField('query.from', 'must be before `to`');
    return c.json({ items: await commands.list({ deviceId: device.id, from, to, limit: query.limit ?? DEFAULT_LIMIT }) });
  });
}
