/**
 * Assets of a device (AllThingsTalk habits, DESIGN.md §5). The AllThingsTalk device SDKs declare
 * their assets with the device token: the Python SDK posts `{Name, Title, Description, Is, Profile}`
 * to `/device/{id}/assets`, the Go and Node SDKs put `{name, is, profile}` to
 * `/device/{id}/asset/{name}`, the Java SDK posts lower-case keys. All of these are accepted as sent.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { checkProfile } from '../../../../engine/uplink/admission/profile.ts';
import { AssetCreateBody, AssetList, AssetPutBody, DeviceAssetParams, DeviceParams } from '../../../../schemas/edge.ts';
import { Asset } from '../../../../schemas/registry.ts';
import { assetOf } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { isPlainObject } from '../../../../engine/kernel/isPlainObject.ts';
import { check, invalidField } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['assets'];

const SDK_KEYS: Record<string, string> = { Name: 'name', Title: 'title', Description: 'description', Is: 'is', Profile: 'profile' };

/**
 * The SDKs' spellings → ours: capitalised keys mapped (a lower-case key given as well wins), null
 * optional fields dropped (the Python SDK sends `Title: null` when none was set), `is` lower-cased.
 */
export function normaliseAssetBody(raw: unknown): unknown {
  if (!isPlainObject(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const mapped = SDK_KEYS[key];
    if (mapped === undefined) out[key] = value;
    else if (!Object.hasOwn(raw, mapped)) out[mapped] = value;
  }
  for (const key of ['title', 'description', 'profile']) if (out[key] === null) delete out[key];
  if (typeof out.is === 'string') out.is = out.is.toLowerCase();
  return out;
}

/**
 * 422 for a profile outside the JSON Schema subset admission compiles (engine/uplink/admission/
 * profile.ts): saved as is, it would refuse every value sent to the asset.
 */
export function checkAssetProfile(profile: Record<string, unknown> | undefined, path: string): void {
  if (profile === undefined) return;
  const problem = checkProfile(profile);
  if (problem !== undefined) throw invalidField(path, problem);
}

export function assetRoutes(edge: EdgeContext): void {
  const { router, access, deps } = edge;
  const { registry } = deps;

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

  router.route({
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
    const device = await access.device(principal, params.id, 'write');
    const body = check<AssetCreateBody>(AssetCreateBody, normaliseAssetBody(await readJsonBody(c.req.raw, edge.maxBodyBytes)), 'body');
    checkAssetProfile(body.profile, 'body.profile');
    if (device.assets.some((a) => a.name === body.name)) {
      throw new FleetError('CONFLICT', `device ${device.id} already has an asset "${body.name}"; PUT /device/{id}/asset/{name} updates it`);
    }
    const { name, ...fields } = body;
    const { asset, created } = await registry.upsertAsset(device.id, name, fields);
    edge.changed(device.id);
    // Lost a race with another create of the same name: the registry has one asset (the port
    // guarantees it), to which this request's fields were applied as an update; report the conflict.
    if (!created) throw new FleetError('CONFLICT', `asset "${name}" was created concurrently`);
    c.header('location', `/device/${device.id}/asset/${asset.name}`);
    return c.json(asset, 201);
  });

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

  router.route({
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
    const device = await access.device(principal, params.id, 'write');
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
    const { asset, created } = await registry.upsertAsset(device.id, params.name, fields);
    edge.changed(device.id);
    if (created) c.header('location', `/device/${device.id}/asset/${asset.name}`);
    return c.json(asset, created ? 201 : 200);
  });

  router.route({
    methods: ['delete'],
    path: '/device/{id}/asset/{name}',
    operationId: 'deleteAsset',
    summary: 'Delete an asset (user token of the ground)',
    tags: TAGS,
    params: DeviceAssetParams,
    responses: { 204: { description: 'deleted' } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const device = await access.device(principal, params.id, 'manage');
    if (!(await registry.deleteAsset(device.id, params.name))) {
      throw new FleetError('UNKNOWN_ASSET', `device ${device.id} has no asset "${params.name}"`);
    }
    edge.changed(device.id);
    return c.body(null, 204);
  });
}
