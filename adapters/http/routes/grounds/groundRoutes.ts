/**
 * Grounds over HTTP (spec-silent: spec §4.6 only names a ground as where a device is
 * activated): any user creates one and becomes its owner; its members read it, its owners rename
 * and delete it. A ground that still has devices is deleted only with `?force=true`, which deletes
 * them with it as DELETE /device/{id} deletes one: assets gone, device tokens revoked, MQTT
 * connections and live streams of those devices closed; their stored states, rejections and
 * command history stay in the store, as for any deleted device, readable through no route. Its
 * memberships, integrations, rules and alarms go with it. The members routes are memberRoutes.ts.
 */
import { noteGround } from '../../auditNote.ts';
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import { FleetError, isFleetError } from '../../../../engine/kernel/errors.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { GroundCreateBody, GroundDeleteQuery, GroundPatchBody, GroundView } from '../../../../schemas/grounds.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['grounds'];

export function groundRoutes(edge: EdgeContext): void {
  createGround(edge);
  getGround(edge);
  updateGround(edge);
  deleteGround(edge);
}

function createGround(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/grounds',
    operationId: 'createGround',
    summary: 'Create a ground; the user of the token becomes its owner',
    tags: TAGS,
    body: { required: true, content: { [JSON_TYPE]: GroundCreateBody } },
    responses: { 201: { description: 'created', content: { [JSON_TYPE]: GroundView } } },
    errors: [403, 413, 415, 422],
  }, async (c, { principal }) => {
    if (principal.scope !== 'user') throw new FleetError('FORBIDDEN', `a ${principal.scope} token cannot create grounds; use a user token`);
    const body = check<GroundCreateBody>(GroundCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    const ground = await edge.deps.registry.createGround({ name: body.name, userId: principal.subjectId, role: 'owner' });
    noteGround(ground.id, ground.id);
    c.header('location', `/ground/${ground.id}`);
    return c.json({ ...ground, role: 'owner' }, 201);
  });
}

function getGround({ router, access }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}',
    operationId: 'getGround',
    summary: 'A ground, with the role the user of the token holds in it',
    tags: TAGS,
    params: GroundParams,
    responses: { 200: { description: 'the ground', content: { [JSON_TYPE]: GroundView } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    c.header('cache-control', 'no-store');
    return c.json(await access.ground(principal, params.groundId, 'viewer'));
  });
}

function updateGround(edge: EdgeContext): void {
  edge.router.route({
    methods: ['patch'],
    path: '/ground/{groundId}',
    operationId: 'updateGround',
    summary: 'Rename a ground (owner)',
    tags: TAGS,
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: GroundPatchBody } },
    responses: { 200: { description: 'the ground', content: { [JSON_TYPE]: GroundView } } },
    errors: [403, 404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    const patch = check<GroundPatchBody>(GroundPatchBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    const updated = await edge.deps.registry.updateGround(ground.id, patch);
    return c.json({ ...updated, role: ground.role });
  });
}

function deleteGround(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/ground/{groundId}',
    operationId: 'deleteGround',
    summary: 'Delete a ground (owner); one that still has devices only with `force=true`, which deletes them too',
    description: 'Its memberships, integrations, rules and alarms go with it. Forced, its devices are deleted as DELETE /device/{id} deletes one (tokens revoked, connections closed); their stored states stay in the store, readable through no route.',
    tags: TAGS,
    params: GroundParams,
    query: GroundDeleteQuery,
    responses: { 204: { description: 'deleted' } },
    errors: [403, 404, 409],
  }, async (c, { principal, params, query }) => {
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    const force = query.force === 'true';
    const deleted = await edge.deps.registry.deleteGround(ground.id, { force }).catch((error: unknown) => {
      if (isFleetError(error) && error.code === 'CONFLICT' && error.detail?.field === 'devices') {
        throw new FleetError('CONFLICT', `${error.message}: delete them first, or DELETE /ground/${ground.id}?force=true to delete them with it`, { cause: error });
      }
      throw error;
    });
    // Deleted meanwhile by another request: gone either way.
    if (deleted === undefined) throw new FleetError('NOT_FOUND', `ground ${ground.id} not found`);
    for (const deviceId of deleted.deviceIds) edge.changed(deviceId, true);
    for (const userId of deleted.memberIds) edge.access.apply({ kind: 'membership-changed', groundId: ground.id, userId });
    return c.body(null, 204);
  });
}
