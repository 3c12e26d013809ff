/**
 * A user's side of activation (spec §4.6, §2.8):
 *   POST /activate          redeem a code into a ground (spec §4.6): 201 with the device and its token
 *   GET  /networks          the networks and their keys (spec §2.8), open to anyone
 *   GET  /activate/{code}   the offer of an unused code (spec-silent, next to §4.6)
 * The offer lets a user about to redeem a code see its hardware id, description and options, so
 * that the option id `POST /activate` needs is chosen, not guessed. Only unused codes answer; an
 * unknown and a used code both read as 404, so the answer tells nothing about codes already
 * redeemed. Codes carry 80 random bits, and the per-token rate limit applies, so this is no
 * enumeration oracle.
 */
import { noteGround } from '../../auditNote.ts';
import { networks } from '../../../../engine/activation/networks.ts';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { ActivateBody, ActivationCodeParams, ActivationOffer, NetworkList } from '../../../../schemas/activationEdge.ts';
import { CreatedDevice } from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { namingFields, requireUser } from './partnerAccess.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['activations'];
/** Registry fields of a redemption that come from the body (not `name`/`network` of a device conflict). */
const ACTIVATE_FIELDS = new Set(['code', 'option', 'groundId']);

export function activateRoutes(edge: EdgeContext): void {
  activate(edge);
  listNetworks(edge);
  activationOffer(edge);
}

function activate(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/activate',
    operationId: 'activate',
    summary: 'Redeem an activation code into a ground (spec §4.6); answers the device and its token, once',
    description: 'In one transaction the device is created in the ground, named after the hardware id, with the assets and payload settings of the option\'s device type version and bound to its network, and the code becomes `used`. 404 unknown code, 422 an option of another activation, 409 a code already used (or a device of that name already in the ground), 403 not a member of the ground, or a viewer of it (activating is an editor\'s right).',
    tags: TAGS,
    body: { required: true, content: { [JSON_TYPE]: ActivateBody } },
    responses: { 201: { description: 'the device, with its device token (shown once)', content: { [JSON_TYPE]: CreatedDevice } } },
    errors: [404, 409, 413, 415, 422],
  }, async (c, { principal }) => {
    // A user, or an API key of the ground (an editor key: the registry checks the role in its transaction).
    if (principal.scope !== 'key') requireUser(principal);
    const body = check<ActivateBody>(ActivateBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body', { nameMissing: true });
    const by = principal.scope === 'key' ? { keyId: principal.subjectId } : { userId: principal.subjectId };
    const { device } = await namingFields(edge.deps.registry.activate({ ...body, ...by }), (field) => (ACTIVATE_FIELDS.has(field) ? `body.${field}` : undefined))
      .catch(async (error: unknown) => {
        // Refused in the registry's transaction (by role, by quota, a code used): the ground's log
        // records it when the caller is a member of it (access notes the ground then), a stranger's not.
        await edge.access.ground(principal, body.groundId).catch(() => undefined);
        throw error;
      });
    noteGround(device.device.groundId, device.device.id);
    edge.changed(device.device.id);
    c.header('location', `/device/${device.device.id}`);
    c.header('cache-control', 'no-store');
    return c.json({ ...device.device, token: device.token }, 201);
  });
}

function listNetworks({ router }: EdgeContext): void {
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

function activationOffer({ router, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/activate/{code}',
    operationId: 'getActivationOffer',
    summary: 'The options of an unused activation code, for the user about to redeem it (no network data)',
    tags: TAGS,
    params: ActivationCodeParams,
    responses: { 200: { description: 'the offer', content: { [JSON_TYPE]: ActivationOffer } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    if (principal.scope !== 'key') requireUser(principal);
    const activation = await deps.registry.findUnusedActivation(params.code);
    if (activation === undefined) throw new FleetError('NOT_FOUND', 'no unused activation with that code');
    c.header('cache-control', 'no-store');
    const offer: ActivationOffer = {
      code: activation.code,
      description: activation.description,
      hardware: { id: activation.hardware.id },
      options: activation.options.map((o) => ({ id: o.id, description: o.description, device: { type: o.device.type }, network: { networkId: o.network.networkId } })),
    };
    return c.json(offer);
  });
}
