/**
 * Who a token speaks for and, for a user, the grounds it may open (spec-silent; the console starts
 * here: it learns whether it holds a user or a partner token, and which partner id to put in
 * `/partner/{partner}/…` paths, without asking the person to type it).
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { GroundList, Me } from '../../../../schemas/edge.ts';
import type { EdgeContext } from '../../EdgeContext.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['principals'];

export function principalRoutes(edge: EdgeContext): void {
  const { router, deps } = edge;
  const { registry } = deps;

  router.route({
    methods: ['get'],
    path: '/me',
    operationId: 'getMe',
    summary: 'The principal of the bearer token: scope (user, partner, device or key), id and name; a key\'s ground and role',
    tags: TAGS,
    responses: { 200: { description: 'the principal', content: { [JSON_TYPE]: Me } } },
  }, async (c, { principal }) => {
    c.header('cache-control', 'no-store');
    if (principal.scope === 'device') return c.json({ scope: principal.scope, id: principal.subjectId });
    if (principal.key !== undefined) {
      const key = await registry.getKey(principal.key.groundId, principal.subjectId);
      if (key === undefined) throw new FleetError('UNAUTHORIZED', 'invalid or revoked token');
      return c.json({ scope: principal.scope, id: key.id, name: key.name, key: principal.key });
    }
    const entity = principal.scope === 'user' ? await registry.getUser(principal.subjectId) : await registry.getPartner(principal.subjectId);
    // Deleted between authentication and this read: the token speaks for no one any more.
    if (entity === undefined) throw new FleetError('UNAUTHORIZED', 'invalid or revoked token');
    return c.json({ scope: principal.scope, id: entity.id, name: entity.name });
  });

  router.route({
    methods: ['get'],
    path: '/grounds',
    operationId: 'listGrounds',
    summary: 'The grounds the user of the token is a member of (a ground\'s API key: its ground)',
    tags: TAGS,
    responses: { 200: { description: 'grounds, oldest first', content: { [JSON_TYPE]: GroundList } } },
    errors: [403],
  }, async (c, { principal }) => {
    c.header('cache-control', 'no-store');
    if (principal.key !== undefined) {
      // A ground's API key reaches its one ground.
      const ground = await registry.getGround(principal.key.groundId);
      return c.json({ items: ground === undefined ? [] : [ground] });
    }
    if (principal.scope !== 'user') throw new FleetError('FORBIDDEN', `a ${principal.scope} token has no grounds; use a user token`);
    return c.json({ items: await registry.listGrounds(principal.subjectId) });
  });
}
