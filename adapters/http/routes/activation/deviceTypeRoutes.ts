/**
 * Device types over HTTP (spec §2.7, §9), partner token of that partner only:
 *   PUT  /partner/{partner}/device-types/{name}            create (201) or replace (200) the draft
 *   POST /partner/{partner}/device-types/{name}/versions   publish the draft as version 1, 2, … (201)
 *   GET  /partner/{partner}/device-types[/{name}]          with their versions
 *   GET  /partner/{partner}/device-types/{name}/versions/{version}   a published version (or `latest`)
 * Activation options name a type `<partner>/<name>` (latest version), `:latest` or `:<n>`.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import type { DeviceTypeDefinition } from '../../../../engine/ports/registry.ts';
import {
  DeviceTypeDraftBody,
  DeviceTypeList,
  DeviceTypeOut,
  DeviceTypeParams,
  DeviceTypeVersionOut,
  DeviceTypeVersionParams,
  PartnerParams,
} from '../../../../schemas/activationEdge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { namingFields, requirePartner } from './partnerAccess.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['device types'];

function typePath(partner: string, name: string): string {
  return `/partner/${partner}/device-types/${encodeURIComponent(name)}`;
}

export function deviceTypeRoutes(edge: EdgeContext): void {
  saveDeviceTypeDraft(edge);
  publishDeviceType(edge);
  listDeviceTypes(edge);
  getDeviceType(edge);
  getDeviceTypeVersion(edge);
}

function saveDeviceTypeDraft(edge: EdgeContext): void {
  edge.router.route({
    methods: ['put'],
    path: '/partner/{partner}/device-types/{name}',
    operationId: 'saveDeviceTypeDraft',
    summary: 'Create a device type or replace its draft: assets with profiles, payload format and conversion script',
    description: 'Published versions never change; publish the draft with POST …/versions. Asset profiles must be in the supported JSON Schema subset; format `binary` needs a conversion script that checks.',
    tags: TAGS,
    params: DeviceTypeParams,
    body: { required: true, content: { [JSON_TYPE]: DeviceTypeDraftBody } },
    responses: {
      200: { description: 'the draft was replaced', content: { [JSON_TYPE]: DeviceTypeOut } },
      201: { description: 'the device type was created', content: { [JSON_TYPE]: DeviceTypeOut } },
    },
    errors: [413, 415, 422],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const body = check<DeviceTypeDraftBody>(DeviceTypeDraftBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body', { nameMissing: true });
    const saved = await namingFields(
      edge.deps.registry.saveDeviceTypeDraft(params.partner, params.name, body as DeviceTypeDefinition),
      (field) => (field === 'name' || field === 'partnerId' ? undefined : `body.${field}`),
    );
    if (saved.created) c.header('location', typePath(params.partner, params.name));
    return c.json(saved.deviceType, saved.created ? 201 : 200);
  });
}

function publishDeviceType({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['post'],
    path: '/partner/{partner}/device-types/{name}/versions',
    operationId: 'publishDeviceType',
    summary: 'Publish the draft as the next immutable version (1, 2, …)',
    tags: TAGS,
    params: DeviceTypeParams,
    responses: { 201: { description: 'the published version', content: { [JSON_TYPE]: DeviceTypeVersionOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const version = await deps.registry.publishDeviceTypeDraft(params.partner, params.name);
    c.header('location', `${typePath(params.partner, params.name)}/versions/${version.version}`);
    return c.json(version, 201);
  });
}

function listDeviceTypes({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/partner/{partner}/device-types',
    operationId: 'listDeviceTypes',
    summary: 'The partner\'s device types by name, with their drafts and versions',
    tags: TAGS,
    params: PartnerParams,
    responses: { 200: { description: 'the device types', content: { [JSON_TYPE]: DeviceTypeList } } },
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    return c.json(await deps.registry.listDeviceTypes(params.partner));
  });
}

function getDeviceType({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/partner/{partner}/device-types/{name}',
    operationId: 'getDeviceType',
    summary: 'A device type with its draft and versions',
    tags: TAGS,
    params: DeviceTypeParams,
    responses: { 200: { description: 'the device type', content: { [JSON_TYPE]: DeviceTypeOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const type = await deps.registry.getDeviceType(params.partner, params.name);
    if (type === undefined) throw new FleetError('NOT_FOUND', `device type ${params.name} not found`);
    return c.json(type);
  });
}

function getDeviceTypeVersion({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/partner/{partner}/device-types/{name}/versions/{version}',
    operationId: 'getDeviceTypeVersion',
    summary: 'A published version, by number or `latest`',
    tags: TAGS,
    params: DeviceTypeVersionParams,
    responses: { 200: { description: 'the version', content: { [JSON_TYPE]: DeviceTypeVersionOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const version = await deps.registry.resolveDeviceType(`${params.partner}/${params.name}:${params.version}`);
    if (version === undefined) throw new FleetError('NOT_FOUND', `device type ${params.name} has no published version ${params.version}`);
    return c.json(version);
  });
}
