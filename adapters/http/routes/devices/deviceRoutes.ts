/**
 * Device management (DESIGN.md §5, AllThingsTalk habits): create and list the devices of a ground
 * with a user token of a member; read, rename and delete a device. Creating answers the device
 * token once.
 */
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import type { Device, DeviceQuery } from '../../../../engine/ports/registry.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import {
  CreatedDevice,
  DeviceCreateBody,
  DeviceListQuery,
  DevicePage,
  DeviceParams,
  DevicePatchBody,
  DeviceWithAssets,
  GroundParams,
} from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { checkAssetProfile } from './assetBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['devices'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

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
    const ground = await edge.access.ground(principal, params.groundId);
    // Lengths are checked on the canonical name (a leading BOM does not count), as the registry does.
    const body = check<DeviceCreateBody>(DeviceCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    body.assets?.forEach((a, i) => checkAssetProfile(a.profile, `body.assets.${i}.profile`));
    const created = await edge.deps.registry.createDevice({ ...body, groundId: ground.id });
    edge.changed(created.device.id);
    c.header('location', `/device/${created.device.id}`);
    c.header('cache-control', 'no-store');
    return c.json({ ...created.device, token: created.token }, 201);
  });
}

function listDevices({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/devices',
    operationId: 'listDevices',
    summary: 'Devices of a ground, oldest first, by pages',
    tags: TAGS,
    params: GroundParams,
    query: DeviceListQuery,
    responses: { 200: { description: 'a page of devices; `next` is the cursor of the following page', content: { [JSON_TYPE]: DevicePage } } },
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId);
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: DeviceQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows: Device[] = await deps.registry.listDevices(ground.id, request);
    return c.json(CURSORS.page(rows, limit, (d) => d.id));
  });
}

function getDevice({ router, access }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/device/{id}',
    operationId: 'getDevice',
    summary: 'A device with its assets (user of its ground, or its own device token)',
    tags: TAGS,
    params: DeviceParams,
    responses: { 200: { description: 'the device', content: { [JSON_TYPE]: DeviceWithAssets } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    return c.json(await access.device(principal, params.id, 'read'));
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
