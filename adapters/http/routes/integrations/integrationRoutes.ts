/**
 * Integrations of a ground (issue: "push every state to applications"), managed by its members with
 * a user token: create (the signing secret is answered once), list by pages, read, change, delete,
 * rotate the secret, and send one test event to see what the receiver answers.
 *
 * - A receiver's URL is checked when created and when changed (adapters/webhooks/webhookUrl.ts:
 *   form, then destination against the operator's allow list); the sender checks again at every
 *   connection.
 * - An integration is found only by members of its ground: for anyone else it does not exist
 *   (404, as an unknown id), so ids of other grounds' integrations cannot be probed.
 * - A rotation keeps the previous secret signing for `graceSeconds` (default 24 h, 0 ends it at
 *   once): receivers verify against either while they switch (Standard Webhooks allows several
 *   signatures in one header).
 * - The test event goes through the same sender as deliveries, with the secrets that sign now. Its
 *   outcome is reported, not acted on: a 410 to a test does not disable the integration.
 */
import { noteTarget } from '../../auditNote.ts';
import { FleetError, isFleetError } from '../../../../engine/kernel/errors.ts';
import { newId } from '../../../../engine/kernel/ids.ts';
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import type { GroundRole, Principal } from '../../../../engine/ports/registry.ts';
import type { Integration, IntegrationQuery } from '../../../../engine/ports/integrationRegistry.ts';
import type { DeliveryStats } from '../../../../engine/ports/integrationDeliveries.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import {
  IntegrationCreateBody,
  IntegrationListQuery,
  IntegrationPage,
  IntegrationParams,
  IntegrationPatch,
  IntegrationTestResult,
  IntegrationView,
  IntegrationWithSecret,
  Integration as IntegrationSchema,
  RotateSecretQuery,
} from '../../../../schemas/integrations.ts';
import type { WebhookAnswer, WebhookRequest } from '../../../../engine/ports/webhooks.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { memberResource } from '../memberResource.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['integrations'];
const DEFAULT_PAGE = 100;
const DEFAULT_GRACE_S = 24 * 3600;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

/** What the integration routes need besides the registry: the operator's destination check and the sender. */
export interface EdgeIntegrations {
  /** Refuses (VALIDATION_FAILED, DESTINATION_REFUSED, field `url`) a URL integrations may not send to. */
  checkUrl(url: string): Promise<unknown>;
  /** One signed attempt (adapters/webhooks/WebhookSender.ts). */
  send(request: WebhookRequest): Promise<WebhookAnswer>;
}

export function integrationRoutes(edge: EdgeContext, integrations: EdgeIntegrations): void {
  createIntegration(edge, integrations);
  listIntegrations(edge);
  getIntegration(edge);
  updateIntegration(edge, integrations);
  deleteIntegration(edge);
  rotateSecret(edge);
  testIntegration(edge, integrations);
}

/**
 * A FleetError of the registry or of the URL check naming `detail.field`, as a field error of the
 * body (`errors: [{path: "body.url", …}]`). A listed device that is not the ground's is a mistake
 * in the body (422), not a missing resource.
 */
function inBody(error: unknown): unknown {
  if (!isFleetError(error)) return error;
  const field = typeof error.detail?.field === 'string' ? error.detail.field : undefined;
  if (field === undefined) return error;
  const bodyError = error.code === 'VALIDATION_FAILED' || error.code === 'DESTINATION_REFUSED' || (error.code === 'NOT_FOUND' && field === 'devices');
  if (!bodyError) return error;
  const path = `body.${field}`;
  const message = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
  const code = error.code === 'NOT_FOUND' ? 'VALIDATION_FAILED' : error.code;
  return new FleetError(code, `${path}: ${message}`, { cause: error, detail: { errors: [{ path, message }] } });
}

/** The integration, when the principal is a member of its ground with `needed` (memberResource). */
function integrationFor(edge: EdgeContext, principal: Principal, integrationId: string, needed: GroundRole): Promise<Integration> {
  return memberResource(edge, principal, 'integration', integrationId, (id) => edge.deps.registry.getIntegration(id), needed);
}

function createIntegration(edge: EdgeContext, integrations: EdgeIntegrations): void {
  edge.router.route({
    methods: ['post'],
    path: '/ground/{groundId}/integrations',
    operationId: 'createIntegration',
    summary: 'Create an integration of a ground; answers its signing secret once',
    tags: TAGS,
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: IntegrationCreateBody } },
    responses: { 201: { description: 'created', content: { [JSON_TYPE]: IntegrationWithSecret } } },
    errors: [404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const ground = await edge.access.ground(principal, params.groundId, 'editor');
    const body = check<IntegrationCreateBody>(IntegrationCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    await integrations.checkUrl(body.url).catch((error: unknown) => Promise.reject(inBody(error)));
    const created = await edge.deps.registry.createIntegration({ ...body, groundId: ground.id }).catch((error: unknown) => Promise.reject(inBody(error)));
    c.header('location', `/integrations/${created.integration.id}`);
    c.header('cache-control', 'no-store');
    noteTarget(created.integration.id);
    return c.json({ ...created.integration, secret: created.secret }, 201);
  });
}

function listIntegrations({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/integrations',
    operationId: 'listIntegrations',
    summary: 'Integrations of a ground, oldest first, by pages',
    tags: TAGS,
    params: GroundParams,
    query: IntegrationListQuery,
    responses: { 200: { description: 'a page of integrations; `next` is the cursor of the following page', content: { [JSON_TYPE]: IntegrationPage } } },
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId);
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: IntegrationQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows = await deps.registry.listIntegrations(ground.id, request);
    return c.json(CURSORS.page(rows, limit, (i) => i.id));
  });
}

function getIntegration(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/integrations/{id}',
    operationId: 'getIntegration',
    summary: 'An integration (never its secret) and how its deliveries go',
    tags: TAGS,
    params: IntegrationParams,
    responses: { 200: { description: 'the integration, its status and delivery figures', content: { [JSON_TYPE]: IntegrationView } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const integration = await integrationFor(edge, principal, params.id, 'viewer');
    return c.json(integrationView(integration, await edge.deps.registry.deliveryStats(integration.id), edge.deps.clock.now()));
  });
}

/** An integration as `GET /integrations/{id}` shows it: `failing` while its last attempt is its last word. */
export function integrationView(integration: Integration, stats: DeliveryStats, now: number): IntegrationView {
  const { lastError, lastSuccessAt } = stats;
  const failing = integration.status === 'active' && lastError !== undefined && (lastSuccessAt === undefined || lastError.at > lastSuccessAt);
  const view: IntegrationView = {
    ...integration,
    status: failing ? 'failing' : integration.status,
    delivered: stats.delivered,
    failedAttempts: stats.failedAttempts,
    pending: { events: stats.pending.events },
    dropped: stats.dropped,
  };
  if (stats.pending.oldestAt !== undefined) view.pending.oldestAgeMs = Math.max(0, now - stats.pending.oldestAt);
  if (lastSuccessAt !== undefined) view.lastSuccessAt = lastSuccessAt;
  if (lastError !== undefined) view.lastError = lastError;
  return view;
}

function updateIntegration(edge: EdgeContext, integrations: EdgeIntegrations): void {
  edge.router.route({
    methods: ['patch'],
    path: '/integrations/{id}',
    operationId: 'updateIntegration',
    summary: 'Change an integration: name, URL, events, filters, headers; `status` disables or re-enables it',
    tags: TAGS,
    params: IntegrationParams,
    body: { required: true, content: { [JSON_TYPE]: IntegrationPatch } },
    responses: { 200: { description: 'the integration', content: { [JSON_TYPE]: IntegrationSchema } } },
    errors: [404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const integration = await integrationFor(edge, principal, params.id, 'editor');
    const patch = check<IntegrationPatch>(IntegrationPatch, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    if (patch.url !== undefined) await integrations.checkUrl(patch.url).catch((error: unknown) => Promise.reject(inBody(error)));
    const updated = await edge.deps.registry.updateIntegration(integration.id, patch).catch((error: unknown) => Promise.reject(inBody(error)));
    return c.json(updated);
  });
}

function deleteIntegration(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/integrations/{id}',
    operationId: 'deleteIntegration',
    summary: 'Delete an integration: nothing more is sent to it',
    tags: TAGS,
    params: IntegrationParams,
    responses: { 204: { description: 'deleted' } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const integration = await integrationFor(edge, principal, params.id, 'editor');
    await edge.deps.registry.deleteIntegration(integration.id);
    return c.body(null, 204);
  });
}

function rotateSecret(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/integrations/{id}/rotate-secret',
    operationId: 'rotateIntegrationSecret',
    summary: 'A new signing secret, answered once; the previous one keeps signing for graceSeconds (default 24 h)',
    tags: TAGS,
    params: IntegrationParams,
    query: RotateSecretQuery,
    responses: { 200: { description: 'the integration and its new secret', content: { [JSON_TYPE]: IntegrationWithSecret } } },
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const integration = await integrationFor(edge, principal, params.id, 'editor');
    const rotated = await edge.deps.registry.rotateIntegrationSecret(integration.id, { graceMs: (query.graceSeconds ?? DEFAULT_GRACE_S) * 1000 });
    c.header('cache-control', 'no-store');
    return c.json({ ...rotated.integration, secret: rotated.secret });
  });
}

function testIntegration(edge: EdgeContext, integrations: EdgeIntegrations): void {
  edge.router.route({
    methods: ['post'],
    path: '/integrations/{id}/test',
    operationId: 'testIntegration',
    summary: 'Send one test event to the integration\'s receiver and answer what it made of it',
    tags: TAGS,
    params: IntegrationParams,
    responses: { 200: { description: 'the receiver\'s answer (or why none came)', content: { [JSON_TYPE]: IntegrationTestResult } } },
    errors: [404],
  }, async (c, { principal, params }) => {
    const integration = await integrationFor(edge, principal, params.id, 'editor');
    const secrets = await edge.deps.registry.integrationSecrets(integration.id);
    if (secrets === undefined) throw new FleetError('NOT_FOUND', `integration ${integration.id} not found`);
    const messageId = `msg_${newId()}`;
    const event = { type: 'test', id: newId(), groundId: integration.groundId, integrationId: integration.id, at: new Date(edge.deps.clock.now()).toISOString() };
    const answer = await integrations.send({ url: integration.url, messageId, events: [event], secrets, headers: integration.headers });
    const result: Record<string, unknown> = { outcome: answer.outcome.kind, body: answer.body, messageId };
    if (answer.status !== undefined) result.status = answer.status;
    if (answer.error !== undefined) result.error = answer.error;
    if (answer.outcome.kind === 'retry' && answer.outcome.retryAfterMs !== undefined) result.retryAfterMs = answer.outcome.retryAfterMs;
    c.header('cache-control', 'no-store');
    return c.json(result);
  });
}
