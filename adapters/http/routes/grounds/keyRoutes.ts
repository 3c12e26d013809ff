/**
 * A ground's API keys (docs/grounds.md "API keys"): its owners create, list and revoke them. A key's
 * token (`fsk_…`) is answered once, at creation, and stored only hashed; it reaches that ground
 * alone with the key's role (viewer or editor), until revoked or expired. Revoking publishes the
 * token's revocation (engine/access/publishingRegistry.ts), which ends the key's live streams on
 * every edge; an expiry ends them on each edge by its own clock (LiveFanOut).
 */
import { noteTarget } from '../../auditNote.ts';
import { FleetError, isFleetError } from '../../../../engine/kernel/errors.ts';
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import type { KeyQuery } from '../../../../engine/ports/registry.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { CreatedKey, KeyCreateBody, KeyListQuery, KeyPage, KeyParams } from '../../../../schemas/groundKeys.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check, invalidField } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['grounds'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

export function keyRoutes(edge: EdgeContext): void {
  createKey(edge);
  listKeys(edge);
  deleteKey(edge);
}

/** The registry's refusal of a body field (an expiry already past) as the edge names fields. */
function inBody(error: unknown): unknown {
  if (!isFleetError(error) || error.code !== 'VALIDATION_FAILED' || typeof error.detail?.field !== 'string') return error;
  const field = error.detail.field;
  return invalidField(`body.${field}`, error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message);
}

function createKey(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/ground/{groundId}/keys',
    operationId: 'createKey',
    summary: 'Create an API key of a ground with the role viewer or editor (owner); its token is shown once',
    tags: TAGS,
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: KeyCreateBody } },
    responses: { 201: { description: 'created: the key and its token (`fsk_…`), never shown again', content: { [JSON_TYPE]: CreatedKey } } },
    errors: [403, 404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    const body = check<KeyCreateBody>(KeyCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    const created = await edge.deps.registry.createKey(ground.id, body, principal.subjectId).catch((error: unknown) => Promise.reject(inBody(error)));
    c.header('cache-control', 'no-store');
    noteTarget(created.key.id);
    return c.json({ ...created.key, token: created.token }, 201);
  });
}

function listKeys({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/keys',
    operationId: 'listKeys',
    summary: 'API keys of a ground, oldest first, by pages, without their tokens (owner)',
    tags: TAGS,
    params: GroundParams,
    query: KeyListQuery,
    responses: { 200: { description: 'a page of keys; `next` is the cursor of the following page', content: { [JSON_TYPE]: KeyPage } } },
    errors: [403, 404, 422],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId, 'owner');
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: KeyQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows = await deps.registry.listKeys(ground.id, request);
    c.header('cache-control', 'no-store');
    return c.json(CURSORS.page(rows, limit, (k) => k.id));
  });
}

function deleteKey(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/ground/{groundId}/keys/{keyId}',
    operationId: 'deleteKey',
    summary: 'Revoke an API key of a ground (owner): its token stops working and its live streams end',
    tags: TAGS,
    params: KeyParams,
    responses: { 204: { description: 'revoked' } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    noteTarget(params.keyId);
    const ground = await edge.access.ground(principal, params.groundId, 'owner');
    const revoked = await edge.deps.registry.revokeKey(ground.id, params.keyId);
    if (revoked === undefined) throw new FleetError('NOT_FOUND', `key ${params.keyId} not found in ground ${ground.id}`);
    edge.access.apply({ kind: 'token-revoked', tokenHash: revoked.tokenHash });
    return c.body(null, 204);
  });
}
