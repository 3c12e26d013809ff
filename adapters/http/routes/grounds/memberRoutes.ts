/**
 * The members of a ground and their roles: its members list them, its owners add,
 * change and remove them. A ground keeps an owner: removing or demoting its last one is 409
 * CONFLICT, decided by the registry in the transaction of the change (engine/ports/groundRegistry.ts),
 * so two owners demoting each other at once cannot both succeed. A change applies to the member's
 * next request at once and to its open live streams and MQTT feeds within a second: the registry
 * change it publishes drops the cached role and re-checks its streams (docs/grounds.md).
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { Member, MemberListQuery, MemberPage, MemberParams, MemberPutBody } from '../../../../schemas/grounds.ts';
import type { MemberQuery } from '../../../../engine/ports/registry.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { noteTarget } from '../../auditNote.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['grounds'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

export function memberRoutes(edge: EdgeContext): void {
  listMembers(edge);
  putMember(edge);
  deleteMember(edge);
}

function listMembers({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/members',
    operationId: 'listMembers',
    summary: 'Members of a ground with their roles, in the order they joined, by pages',
    tags: TAGS,
    params: GroundParams,
    query: MemberListQuery,
    responses: { 200: { description: 'a page of members; `next` is the cursor of the following page', content: { [JSON_TYPE]: MemberPage } } },
    errors: [403, 404, 422],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId, 'viewer');
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: MemberQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows = await deps.registry.listMembers(ground.id, request);
    c.header('cache-control', 'no-store');
    return c.json(CURSORS.page(rows, limit, (m) => m.userId));
  });
}

function putMember(edge: EdgeContext): void {
  edge.router.route({
    methods: ['put'],
    path: '/ground/{groundId}/members/{userId}',
    operationId: 'putMember',
    summary: 'Add a user to a ground with a role (201), or change a member\'s role (200) (owner)',
    tags: TAGS,
    params: MemberParams,
    body: { required: true, content: { [JSON_TYPE]: MemberPutBody } },
    responses: {
      200: { description: 'the member, with its role', content: { [JSON_TYPE]: Member } },
      201: { description: 'added', content: { [JSON_TYPE]: Member } },
    },
    errors: [403, 404, 409, 413, 415, 422],
  }, async (c, { principal, params }) => {
    noteTarget(params.userId);
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    const body = check<MemberPutBody>(MemberPutBody, await readJsonBody(c.req.raw, edge.maxBodyBytes), 'body');
    const set = await edge.deps.registry.setMemberRole(ground.id, params.userId, body.role);
    if (set.changed) edge.access.apply({ kind: 'membership-changed', groundId: ground.id, userId: params.userId });
    return c.json(set.member, set.created ? 201 : 200);
  });
}

function deleteMember(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/ground/{groundId}/members/{userId}',
    operationId: 'deleteMember',
    summary: 'Remove a member from a ground (owner); never its last owner (409)',
    tags: TAGS,
    params: MemberParams,
    responses: { 204: { description: 'removed' } },
    errors: [403, 404, 409],
  }, async (c, { principal, params }) => {
    noteTarget(params.userId);
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    if (!(await edge.deps.registry.removeMember(ground.id, params.userId))) {
      throw new FleetError('NOT_FOUND', `user ${params.userId} is not a member of ground ${ground.id}`);
    }
    edge.access.apply({ kind: 'membership-changed', groundId: ground.id, userId: params.userId });
    return c.body(null, 204);
  });
}
