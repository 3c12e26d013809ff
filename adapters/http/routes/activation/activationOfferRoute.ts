/**
 * `GET /activate/{code}` (spec-silent, next to §4.6): a user about to redeem a code sees its
 * hardware id, description and options, so that the option id `POST /activate` needs is chosen,
 * not guessed. Only unused codes answer; an unknown and a used code both read as 404, so the
 * answer tells nothing about codes already redeemed. Codes carry 80 random bits, and the per-token
 * rate limit applies, so this is no enumeration oracle.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { ActivationCodeParams, ActivationOffer } from '../../../../schemas/activationEdge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { requireUser } from './partnerAccess.ts';

const JSON_TYPE = 'application/json';

export function activationOfferRoute(edge: EdgeContext): void {
  const { router, deps } = edge;
  router.route({
    methods: ['get'],
    path: '/activate/{code}',
    operationId: 'getActivationOffer',
    summary: 'The options of an unused activation code, for the user about to redeem it (no network data)',
    tags: ['activations'],
    params: ActivationCodeParams,
    responses: { 200: { description: 'the offer', content: { [JSON_TYPE]: ActivationOffer } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    requireUser(principal);
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
