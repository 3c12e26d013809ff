/**
 * A partner's activations over HTTP (spec §2.5–2.8, §4.5, §4.7), partner token of that partner
 * (DESIGN.md §5):
 *   POST   /partner/{partner}/activations            create (spec §4.5: 201)
 *   GET    /partner/{partner}/activations            list: ?status, ?hardwareId, ?limit, ?cursor
 *   GET    /partner/{partner}/activations/{code}     read
 *   PATCH  /partner/{partner}/activations/{code}     change description/options while unused (409 once used)
 *   DELETE /partner/{partner}/activations/{code}     delete while unused (409 once used)
 *   GET    /partner/{partner}/hardware/{hardwareId}/activation   look up by hardware id (spec §2.6)
 * Redeeming a code (a user's) and the networks table are activateRoutes.ts's.
 *
 * Activations are answered with exactly the fields of spec §2.5 (activationOut.ts); status is
 * `unused`, then `used`.
 */
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import type { Activation, ActivationQuery, NewActivation } from '../../../../engine/ports/registry.ts';
import {
  ActivationCreateBody,
  ActivationListQuery,
  ActivationOut,
  ActivationPage,
  ActivationParams,
  ActivationPatchBody,
  HardwareParams,
  PartnerParams,
} from '../../../../schemas/activationEdge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { activationOut } from './activationOut.ts';
import { namingFields, requirePartner } from './partnerAccess.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['activations'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors('[0-9A-Z]{16}');
const ANSWER = { 200: { description: 'the activation', content: { [JSON_TYPE]: ActivationOut } } };

/** Spec §4.5 shows `network: {networkId, data}`; a network without keys may leave `data` out. */
function withData(options: ActivationCreateBody['options']): NewActivation['options'] {
  return options.map((o) => ({ ...o, network: { networkId: o.network.networkId, data: o.network.data ?? {} } }));
}

/** Registry fields of an activation body → where they are in the request. */
const inBody = (field: string) => (field === 'partnerId' ? undefined : `body.${field}`);

function notFound(code: string): FleetError {
  return new FleetError('NOT_FOUND', `activation ${code.slice(0, 64)} not found`, { detail: { field: 'code' } });
}

export function activationRoutes(edge: EdgeContext): void {
  createActivation(edge);
  listActivations(edge);
  getActivation(edge);
  updateActivation(edge);
  deleteActivation(edge);
  findActivationByHardware(edge);
}

function createActivation(edge: EdgeContext): void {
  edge.router.route({
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
    const created = await namingFields(edge.deps.registry.createActivation(params.partner, { ...body, options: withData(body.options) }), inBody);
    c.header('location', `/partner/${params.partner}/activations/${created.code}`);
    c.header('cache-control', 'no-store');
    return c.json(activationOut(created), 201);
  });
}

function listActivations({ router, deps }: EdgeContext): void {
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
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, code: after.key };
    }
    const rows: Activation[] = await deps.registry.listActivations(params.partner, request);
    const page = CURSORS.page(rows, limit, (a) => a.code);
    return c.json({ ...page, items: page.items.map(activationOut) });
  });
}

function getActivation({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/partner/{partner}/activations/{code}',
    operationId: 'getActivation',
    summary: 'An activation by code',
    tags: TAGS,
    params: ActivationParams,
    responses: ANSWER,
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const activation = await deps.registry.getActivation(params.partner, params.code);
    if (activation === undefined) throw notFound(params.code);
    return c.json(activationOut(activation));
  });
}

function updateActivation(edge: EdgeContext): void {
  edge.router.route({
    methods: ['patch'],
    path: '/partner/{partner}/activations/{code}',
    operationId: 'updateActivation',
    summary: 'Change the description or replace the options of an unused activation',
    description: 'New options get new ids. The hardware id never changes: delete the activation and create another. 409 once the code was used.',
    tags: TAGS,
    params: ActivationParams,
    body: { required: true, content: { [JSON_TYPE]: ActivationPatchBody } },
    responses: ANSWER,
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const body = check<ActivationPatchBody>(ActivationPatchBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body', { nameMissing: true });
    const updated = await namingFields(
      edge.deps.registry.updateActivation(params.partner, params.code, body.options === undefined ? { description: body.description } : { ...body, options: withData(body.options) }),
      (field) => (field === 'code' ? 'path.code' : inBody(field)),
    );
    return c.json(activationOut(updated));
  });
}

function deleteActivation({ router, deps }: EdgeContext): void {
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
    if (!(await deps.registry.deleteActivation(params.partner, params.code))) throw notFound(params.code);
    return c.body(null, 204);
  });
}

function findActivationByHardware({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/partner/{partner}/hardware/{hardwareId}/activation',
    operationId: 'findActivationByHardware',
    summary: 'The activation of a hardware id, for troubleshooting (spec §2.6)',
    description: 'Once used, `activatedDeviceId` names the device the unit became. Percent-encode the hardware id.',
    tags: TAGS,
    params: HardwareParams,
    responses: ANSWER,
    errors: [404],
  }, async (c, { principal, params }) => {
    requirePartner(principal, params.partner);
    const activation = await deps.registry.findActivationByHardware(params.partner, params.hardwareId);
    if (activation === undefined) throw new FleetError('NOT_FOUND', 'no activation for that hardware id');
    return c.json(activationOut(activation));
  });
}
