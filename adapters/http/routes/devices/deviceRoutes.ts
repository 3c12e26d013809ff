/**
 * Device management (DESIGN.md §5, AllThingsTalk habits): create and list the devices of a ground
 * with a user token of a member; read, rename and delete a device. Creating answers the device
 * token once. Reading a device tells its connectivity (engine/ports/connectivityRegistry.ts), read
 * from the registry each time (the cached device does not hold it); `?silentFor=` lists the ground's
 * silent devices.
 */
import { noteTarget } from '../../auditNote.ts';
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import type { Device, DeviceQuery } from '../../../../engine/ports/registry.ts';
import { parseDuration } from '../../../../engine/rules/duration.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import {
  CreatedDevice,
  DeviceCreateBody,
  DeviceListQuery,
  DevicePage,
  DeviceParams,
  DevicePatchBody,
  DeviceView,
  DeviceWithAssets,
  GroundParams,
} from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check, invalidField } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { checkAssetProfile } from './assetBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['devices'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));
/** Longest `silentFor`: ten years (P3660D); a day is 24 hours (engine/rules/duration.ts). */
const MAX_SILENT_FOR_MS = 3660 * 86_400_000;

export function deviceRoutes(edge: EdgeContext): void {
  createDevice(edge);
  listDevices(edge);
  getDevice(edge);
  updateDevice(edge);
  deleteDevice(edge);
}

function createDevice(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/ground/{groundId}/devices',
    operationId: 'createDevice',
    summary: 'Create a device (and its assets) in a ground; answers its device token once',
    tags: TAGS,
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: DeviceCreateBody } },
    responses: { 201: { description: 'created', content: { [JSON_TYPE]: CreatedDevice } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const ground = await edge.access.ground(principal, params.groundId, 'editor');
    // Lengths are checked on the canonical name (a leading BOM does not count), as the registry does.
    const body = check<DeviceCreateBody>(DeviceCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    body.assets?.forEach((a, i) => checkAssetProfile(a.profile, `body.assets.${i}.profile`));
    const created = await edge.deps.registry.createDevice({ ...body, groundId: ground.id });
    edge.changed(created.device.id);
    c.header('location', `/device/${created.device.id}`);
    c.header('cache-control', 'no-store');
    noteTarget(created.device.id);
    return c.json({ ...created.device, token: created.token }, 201);
  });
}

function listDevices({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/devices',
    operationId: 'listDevices',
    summary: 'Devices of a ground, oldest first, by pages; with `silentFor`, the devices silent that long, longest silent first',
    tags: TAGS,
    params: GroundParams,
    query: DeviceListQuery,
    responses: { 200: { description: 'a page of devices; `next` is the cursor of the following page', content: { [JSON_TYPE]: DevicePage } } },
    errors: [404, 422],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId);
    const limit = query.limit ?? DEFAULT_PAGE;
    if (query.silentFor !== undefined) {
      const silentSince = deps.clock.now() - silentForMs(query.silentFor);
      const after = query.cursor === undefined ? undefined : CURSORS.decode(query.cursor);
      const rows = await deps.registry.listSilentDevices(ground.id, { silentSince, limit: limit + 1, after: after && { silentSince: after.createdAt, id: after.key } });
      // The cursor holds the silent-since time, the order of this listing.
      const page = CURSORS.page(rows.map(({ silentSince: since, ...device }) => ({ device, createdAt: since })), limit, (r) => r.device.id);
      return c.json({ ...page, items: page.items.map((r) => r.device) });
    }
    const request: DeviceQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows: Device[] = await deps.registry.listDevices(ground.id, request);
    return c.json(CURSORS.page(rows, limit, (d) => d.id));
  });
}

function getDevice({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/device/{id}',
    operationId: 'getDevice',
    summary: 'A device with its assets and connectivity (user of its ground, or its own device token)',
    tags: TAGS,
    params: DeviceParams,
    responses: { 200: { description: 'the device', content: { [JSON_TYPE]: DeviceView } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'read');
    const seen = await deps.registry.connectivity(device.id, deps.clock.now());
    // Deleted meanwhile: the device as it was, without connectivity.
    if (seen === undefined) return c.json(device);
    const view: DeviceView = { ...device };
    if (seen.lastSeenAt !== undefined) view.lastSeenAt = seen.lastSeenAt;
    if (deps.sessionsSeen !== false) view.connected = seen.connected;
    return c.json(view);
  });
}

function updateDevice(edge: EdgeContext): void {
  edge.router.route({
    methods: ['patch'],
    path: '/device/{id}',
    operationId: 'updateDevice',
    summary: 'Change the name, title or description of a device',
    tags: TAGS,
    params: DeviceParams,
    body: { required: true, content: { [JSON_TYPE]: DevicePatchBody } },
    responses: { 200: { description: 'the device', content: { [JSON_TYPE]: DeviceWithAssets } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'manage');
    const patch = check<DevicePatchBody>(DevicePatchBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    const updated = await edge.deps.registry.updateDevice(device.id, patch);
    edge.changed(device.id);
    return c.json({ ...updated, assets: device.assets });
  });
}

function deleteDevice(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/device/{id}',
    operationId: 'deleteDevice',
    summary: 'Delete a device and its assets; its tokens are revoked',
    tags: TAGS,
    params: DeviceParams,
    responses: { 204: { description: 'deleted' } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'manage');
    await edge.deps.registry.deleteDevice(device.id);
    edge.changed(device.id, true);
    return c.body(null, 204);
  });
}

/** `?silentFor=`, ms: an ISO 8601 duration of weeks, days, hours, minutes and seconds, above zero and at most P3660D. */
function silentForMs(text: string): number {
  const parsed = parseDuration(text);
  if ('problem' in parsed) throw invalidField('query.silentFor', parsed.problem);
  if (parsed.ms <= 0) throw invalidField('query.silentFor', 'must be above zero');
  if (parsed.ms > MAX_SILENT_FOR_MS) throw invalidField('query.silentFor', 'must be at most ten years (P3660D)');
  return parsed.ms;
}
