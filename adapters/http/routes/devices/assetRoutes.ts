/**
 * Assets of a device (AllThingsTalk habits, DESIGN.md §5). The AllThingsTalk device SDKs declare
 * their assets with the device token: the Python SDK posts to `/device/{id}/assets`, the Go and Node
 * SDKs put to `/device/{id}/asset/{name}`, each with its own spelling of the body (assetBody.ts).
 * All of these are accepted as sent.
 */
import { noteTarget } from '../../auditNote.ts';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { AssetCreateBody, AssetList, AssetPutBody, DeviceAssetParams, DeviceParams } from '../../../../schemas/edge.ts';
import { Asset } from '../../../../schemas/registry.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { checkAssetProfile, normaliseAssetBody } from './assetBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['assets'];

export function assetRoutes(edge: EdgeContext): void {
  listAssets(edge);
  createAsset(edge);
  getAsset(edge);
  putAsset(edge);
  deleteAsset(edge);
}

function listAssets({ router, access }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/device/{id}/assets',
    operationId: 'listAssets',
    summary: 'Assets of a device, by name (a JSON array, as the AllThingsTalk SDKs expect)',
    tags: TAGS,
    params: DeviceParams,
    responses: { 200: { description: 'the assets', content: { [JSON_TYPE]: AssetList } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'read');
    return c.json(device.assets);
  });
}

function createAsset(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/device/{id}/assets',
    operationId: 'createAsset',
    summary: 'Create an asset (also takes the SDKs\' Name/Title/Description/Is/Profile keys)',
    tags: TAGS,
    params: DeviceParams,
    body: { required: true, content: { [JSON_TYPE]: AssetCreateBody } },
    responses: { 201: { description: 'created', content: { [JSON_TYPE]: Asset } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'write');
    const body = check<AssetCreateBody>(AssetCreateBody, normaliseAssetBody(await readJsonBody(c.req.raw, edge.maxBodyBytes)), 'body');
    checkAssetProfile(body.profile, 'body.profile');
    if (device.assets.some((a) => a.name === body.name)) {
      throw new FleetError('CONFLICT', `device ${device.id} already has an asset "${body.name}"; PUT /device/{id}/asset/{name} updates it`);
    }
    const { name, ...fields } = body;
    const { asset, created } = await edge.deps.registry.upsertAsset(device.id, name, fields);
    edge.changed(device.id);
    // Lost a race with another create of the same name: the registry has one asset (the port
    // guarantees it), to which this request's fields were applied as an update; report the conflict.
    if (!created) throw new FleetError('CONFLICT', `asset "${name}" was created concurrently`);
    c.header('location', `/device/${device.id}/asset/${asset.name}`);
    noteTarget(asset.id);
    return c.json(asset, 201);
  });
}

function getAsset({ router, access }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/device/{id}/asset/{name}',
    operationId: 'getAsset',
    summary: 'One asset of a device',
    tags: TAGS,
    params: DeviceAssetParams,
    responses: { 200: { description: 'the asset', content: { [JSON_TYPE]: Asset } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'read');
    return c.json(assetOf(device, params.name));
  });
}

function putAsset(edge: EdgeContext): void {
  edge.router.route({
    methods: ['put'],
    path: '/device/{id}/asset/{name}',
    operationId: 'putAsset',
    summary: 'Create (201, `is` required) or update (200) an asset; the name never changes',
    tags: TAGS,
    params: DeviceAssetParams,
    body: { required: true, content: { [JSON_TYPE]: AssetPutBody } },
    responses: {
      200: { description: 'updated', content: { [JSON_TYPE]: Asset } },
      201: { description: 'created', content: { [JSON_TYPE]: Asset } },
    },
    errors: [404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'write');
    const body = check<AssetPutBody>(AssetPutBody, normaliseAssetBody(await readJsonBody(c.req.raw, edge.maxBodyBytes)), 'body');
    const { name, ...fields } = body;
    checkAssetProfile(fields.profile, 'body.profile');
    if (name !== undefined && name !== params.name) {
      throw new FleetError('VALIDATION_FAILED', 'body.name: differs from the name in the path (asset names never change)', {
        detail: { errors: [{ path: 'body.name', message: 'differs from the name in the path' }] },
      });
    }
    if (fields.is === undefined && !device.assets.some((a) => a.name === params.name)) {
      throw new FleetError('VALIDATION_FAILED', 'body.is: required to create an asset', {
        detail: { errors: [{ path: 'body.is', message: 'required to create an asset (sensor, actuator or virtual)' }] },
      });
    }
    const { asset, created } = await edge.deps.registry.upsertAsset(device.id, params.name, fields);
    edge.changed(device.id);
    if (created) c.header('location', `/device/${device.id}/asset/${asset.name}`);
    noteTarget(asset.id);
    return c.json(asset, created ? 201 : 200);
  });
}

function deleteAsset(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/device/{id}/asset/{name}',
    operationId: 'deleteAsset',
    summary: 'Delete an asset (user token of the ground)',
    tags: TAGS,
    params: DeviceAssetParams,
    responses: { 204: { description: 'deleted' } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await edge.access.device(principal, params.id, 'manage');
    if (!(await edge.deps.registry.deleteAsset(device.id, params.name))) {
      throw new FleetError('UNKNOWN_ASSET', `device ${device.id} has no asset "${params.name}"`);
    }
    edge.changed(device.id);
    return c.body(null, 204);
  });
}
