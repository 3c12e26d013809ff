/**
 * Activations over HTTP (spec §2.5–2.8, §4.5–4.7).
 *
 * Partner token of that partner (DESIGN.md §5):
 *   POST   /partner/{partner}/activations            create (spec §4.5: 201)
 *   GET    /partner/{partner}/activations            list: ?status, ?hardwareId, ?limit, ?cursor
 *   GET    /partner/{partner}/activations/{code}     read
 *   PATCH  /partner/{partner}/activations/{code}     change description/options while unused (409 once used)
 *   DELETE /partner/{partner}/activations/{code}     delete while unused (409 once used)
 *   GET    /partner/{partner}/hardware/{hardwareId}/activation   look up by hardware id (spec §2.6)
 * User token:
 *   POST   /activate                                 redeem a code into a ground (spec §4.6): 201 with the device and its token
 * Anyone:
 *   GET    /networks                                 the networks and their keys (spec §2.8)
 *
 * Activations are answered with exactly the fields of spec §2.5; status is `unused`, then `used`.
 */
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { networks } from '../../../../engine/activation/networks.ts';
import type { Activation, ActivationQuery, NewActivation } from '../../../../engine/ports/registry.ts';
import {
  ActivateBody,
  ActivationCreateBody,
  ActivationListQuery,
  ActivationOut,
  ActivationPage,
  ActivationParams,
  ActivationPatchBody,
  HardwareParams,
  NetworkList,
  PartnerParams,
} from '../../../../schemas/activationEdge.ts';
import { CreatedDevice } from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { namingFields, requirePartner, requireUser } from './partnerAccess.ts';
import { check, invalidField } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['activations'];
const DEFAULT_PAGE = 100;

/** Spec §2.5, in its order; the registry's partnerId and createdAt stay inside. */
export function activationOut(a: Activation): ActivationOut {
  return {
    code: a.code,
    description: a.description,
    status: a.status,
    activatedDeviceId: a.activatedDeviceId,
    activatedOptionId: a.activatedOptionId,
    hardware: { id: a.hardware.id },
    options: a.options.map((o) => ({
      id: o.id,
      description: o.description,
      device: { type: o.device.type },
      network: { networkId: o.network.networkId, data: orderedData(o.network.networkId, o.network.data) },
    })),
  };
}

/** The network's keys in the table's order (required, then optional), then anything else. */
function orderedData(networkId: string, data: Record<string, unknown>): Record<string, unknown> {
  const network = networks.get(networkId);
  if (network === undefined) return data;
  const out: Record<string, unknown> = {};
  for (const key of [...network.required, ...network.optional]) if (Object.hasOwn(data, key)) out[key] = data[key];
  for (const [key, value] of Object.entries(data)) if (!Object.hasOwn(out, key)) out[key] = value;
  return out;
}

/** Spec §4.5 shows `network: {networkId, data}`; a network without keys may leave `data` out. */
function withData(options: ActivationCreateBody['options']): NewActivation['options'] {
  return options.map((o) => ({ ...o, network: { networkId: o.network.networkId, data: o.network.data ?? {} } }));
}

function encodeCursor(a: Activation): string {
  return Buffer.from(`${a.createdAt}.${a.code}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; code: string } {
  const match = /^([0-9]{1,16})\.([0-9A-Z]{16})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null || !Number.isSafeInteger(Number(match[1]))) {
    throw invalidField('query.cursor', 'not a cursor of this list');
  }
  return { createdAt: Number(match[1]), code: match[2] };
}

/** Registry fields of an activation body → where they are in the request. */
const inBody = (field: string) => (field === 'partnerId' ? undefined : `body.${field}`);
/** Registry fields of a redemption that come from the body (not `name`/`network` of a device conflict). */
const ACTIVATE_FIELDS = new Set(['code', 'option', 'groundId']);

export function activationRoutes(edge: EdgeContext): void {
  const { router, deps } = edge;
  const { registry } = deps;

  const notFound = (code: string) => new FleetError('NOT_FOUND', `activation ${code.slice(0, 64)} not found`, { detail: { field: 'code' } });

  router.route({
    methods: ['post'],
    path: '/partner/{partner}/activations',
    operationId: 'createActivation',
    summary: 'Create an activation code for one hardware unit with its rollout options (spec §4.5)',
    description: 'One hardware id maps to exactly one activation code (409 for a second one). Options name a published device type `<partner>/<name>[:latest|:<n>]` (a type that has only a draft gets it published as version 1 for `:latest`; an unknown type is 422) and a network with its keys (GET /networks).',
    tags: TAGS,
    params: PartnerParams,
    body: { required: true, content: { [JSON_TYPE]: ActivationCreateBody } },
    responses: { 201: { description: 'the activation (spec §2.5)', content: { [JSON_TYPE]: ActivationOut } } },
    errors: [409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    // The hardware id's length and pattern are checked on its canonical form (no BOM, NFC), as the registry stores it.
    const raw = await readJsonBody(c.req.raw, edge.maxBodyBytes) as { hardware?: unknown } | null;
    const canonical = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? { ...raw, hardware: withCanonicalField(raw.hardware, 'id') } : raw;
    const body = check<ActivationCreateBody>(ActivationCreateBody, canonical, 'body', { nameMissing: true });
    const created = await namingFields(registry.createActivation(params.partner, { ...body, options: withData(body.options) }), inBody);
    c.header('location', `/partner/${params.partner}/activations/${created.code}`);
    c.header('cache-control', 'no-store');
    return c.json(activationOut(created), 201);
  });

  router.route({
    methods: ['get'],
    path: '/partner/{partner}/activations',
    operationId: 'listActivations',
    summary: 'The partner\'s activations, oldest first, by pages',
    tags: TAGS,
    params: PartnerParams,
    query: ActivationListQuery,
    responses: { 200: { description: 'a page', content: { [JSON_TYPE]: ActivationPage } } },
  }, async (c, { principal, params, query }) => {
    requirePartner(principal, params.partner);
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: ActivationQuery = { limit: limit + 1 };
    if (query.status !== undefined) request.status = query.status;
    if (query.hardwareId !== undefined) request.hardwareId = query.hardwareId;
    if (query.cursor !== undefined) request.after = decodeCursor(query.cursor);
    const rows = await registry.listActivations(params.partner, request);
    const items = rows.slice(0, limit);
    const page: { items: ActivationOut[]; next?: string } = { items: items.map(activationOut) };
    if (rows.length > limit) page.next = encodeCursor(items[items.length - 1]);
    return c.json(page);
  });

  router.route({
    methods: ['get'],
    path: '/partner/{partner}/activations/{code}',
    operationId: 'getActivation',
    summary: 'An activation by code',
    tags: TAGS,
    params: ActivationParams,
    responses: { 200: { description: 'the activation', content: { [JSON_TYPE]: ActivationOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const activation = await registry.getActivation(params.partner, params.code);
    if (activation === undefined) throw notFound(params.code);
    return c.json(activationOut(activation));
  });

  router.route({
    methods: ['patch'],
    path: '/partner/{partner}/activations/{code}',
    operationId: 'updateActivation',
    summary: 'Change the description or replace the options of an unused activation',
    description: 'New options get new ids. The hardware id never changes: delete the activation and create another. 409 once the code was used.',
    tags: TAGS,
    params: ActivationParams,
    body: { required: true, content: { [JSON_TYPE]: ActivationPatchBody } },
    responses: { 200: { description: 'the activation', content: { [JSON_TYPE]: ActivationOut } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const body = check<ActivationPatchBody>(ActivationPatchBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body', { nameMissing: true });
    const updated = await namingFields(
      registry.updateActivation(params.partner, params.code, body.options === undefined ? { description: body.description } : { ...body, options: withData(body.options) }),
      (field) => (field === 'code' ? 'path.code' : inBody(field)),
    );
    return c.json(activationOut(updated));
  });

  router.route({
    methods: ['delete'],
    path: '/partner/{partner}/activations/{code}',
    operationId: 'deleteActivation',
    summary: 'Delete an unused activation (409 once used)',
    tags: TAGS,
    params: ActivationParams,
    responses: { 204: { description: 'deleted' } },
    errors: [404, 409],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    if (!(await registry.deleteActivation(params.partner, params.code))) throw notFound(params.code);
    return c.body(null, 204);
  });

  router.route({
    methods: ['get'],
    path: '/partner/{partner}/hardware/{hardwareId}/activation',
    operationId: 'findActivationByHardware',
    summary: 'The activation of a hardware id, for troubleshooting (spec §2.6)',
    description: 'Once used, `activatedDeviceId` names the device the unit became. Percent-encode the hardware id.',
    tags: TAGS,
    params: HardwareParams,
    responses: { 200: { description: 'the activation', content: { [JSON_TYPE]: ActivationOut } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const activation = await registry.findActivationByHardware(params.partner, params.hardwareId);
    if (activation === undefined) throw new FleetError('NOT_FOUND', 'no activation for that hardware id');
    return c.json(activationOut(activation));
  });

  router.route({
    methods: ['post'],
    path: '/activate',
    operationId: 'activate',
    summary: 'Redeem an activation code into a ground (spec §4.6); answers the device and its token, once',
    description: 'In one transaction the device is created in the ground, named after the hardware id, with the assets and payload settings of the option\'s device type version and bound to its network, and the code becomes `used`. 404 unknown code, 422 an option of another activation, 409 a code already used (or a device of that name already in the ground), 403 not a member of the ground.',
    tags: TAGS,
    body: { required: true, content: { [JSON_TYPE]: ActivateBody } },
    responses: { 201: { description: 'the device, with its device token (shown once)', content: { [JSON_TYPE]: CreatedDevice } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal }) => {
    requireUser(principal);
    const body = check<ActivateBody>(ActivateBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body', { nameMissing: true });
    const { device } = await namingFields(registry.activate({ ...body, userId: principal.subjectId }), (field) => (ACTIVATE_FIELDS.has(field) ? `body.${field}` : undefined));
    edge.changed(device.device.id);
    c.header('location', `/device/${device.device.id}`);
    c.header('cache-control', 'no-store');
    return c.json({ ...device.device, token: device.token }, 201);
  });

  router.publicRoute({
    methods: ['get'],
    path: '/networks',
    operationId: 'listNetworks',
    summary: 'The networks an activation option can name, with the keys of their `network.data` (spec §2.8)',
    tags: TAGS,
    responses: { 200: { description: 'the networks', content: { [JSON_TYPE]: NetworkList } } },
  }, (c) => c.json(networks.list().map((n) => ({
    id: n.id, alias: n.alias, kind: n.kind, title: n.title, downlink: n.downlink, required: n.required, optional: n.optional,
  }))));
}
