/**
 * Rules of a ground (docs/rules.md), managed by its members with a user token: create, list by
 * pages, read, change, delete. A rule is checked against the ground's devices before it is stored
 * (engine/rules/checkRule.ts): its durations, that its condition can hold on the asset's profiles,
 * its actions' command and integration. Like integrations, a rule is found only by members of its
 * ground: for anyone else it does not exist (404, as an unknown id).
 */
import { noteTarget } from '../../auditNote.ts';
import { FleetError, isFleetError } from '../../../../engine/kernel/errors.ts';
import { requireMemberToken } from '../../../../engine/access/groundRoles.ts';
import { withCanonicalField } from '../../../../engine/kernel/canonicalText.ts';
import { checkRule, type RuleShape } from '../../../../engine/rules/checkRule.ts';
import type { GroundRole, Principal } from '../../../../engine/ports/registry.ts';
import type { Rule, RuleQuery } from '../../../../engine/ports/ruleRegistry.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { RuleCreateBody, RuleListQuery, RulePage, RuleParams, RulePatch, Rule as RuleSchema } from '../../../../schemas/rules.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { check } from '../../request/check.ts';
import { readJsonBody } from '../../request/readBody.ts';
import { listCursors } from '../listCursor.ts';
import { memberResource } from '../memberResource.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['rules'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

export function ruleRoutes(edge: EdgeContext): void {
  createRule(edge);
  listRules(edge);
  getRule(edge);
  updateRule(edge);
  deleteRule(edge);
}

/** A registry FleetError naming a field of the body (a listed device not in the ground) as a field error: 422. */
function inBody(error: unknown): unknown {
  if (!isFleetError(error)) return error;
  const field = typeof error.detail?.field === 'string' ? error.detail.field : undefined;
  if (field === undefined || !(error.code === 'VALIDATION_FAILED' || (error.code === 'NOT_FOUND' && field === 'devices'))) return error;
  const path = `body.${field}`;
  const message = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
  return new FleetError('VALIDATION_FAILED', `${path}: ${message}`, { cause: error, detail: { errors: [{ path, message }] } });
}

/** The rule, when the principal is a member of its ground with `needed` (memberResource). */
function ruleFor(edge: EdgeContext, principal: Principal, ruleId: string, needed: GroundRole): Promise<Rule> {
  return memberResource(edge, principal, 'rule', ruleId, (id) => edge.deps.registry.getRule(id), needed);
}

function checkAgainstGround(edge: EdgeContext, groundId: string, rule: RuleShape): Promise<void> {
  const { registry } = edge.deps;
  return checkRule(rule, {
    groundId,
    declarations: (asset) => registry.assetDeclarations(groundId, asset, rule.devices),
    integrationGround: async (id) => (await registry.getIntegration(id))?.groundId,
  });
}

function createRule(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/ground/{groundId}/rules',
    operationId: 'createRule',
    summary: 'Create a rule of a ground: an asset watched for a condition, the alarm\'s severity, what runs when it is raised',
    tags: TAGS,
    params: GroundParams,
    body: { required: true, content: { [JSON_TYPE]: RuleCreateBody } },
    responses: { 201: { description: 'created', content: { [JSON_TYPE]: RuleSchema } } },
    errors: [403, 404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    requireMemberToken(principal, 'manage rules');
    const ground = await edge.access.ground(principal, params.groundId, 'editor');
    const body = check<RuleCreateBody>(RuleCreateBody, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    await checkAgainstGround(edge, ground.id, body);
    const created = await edge.deps.registry.createRule({ ...body, groundId: ground.id }).catch((error: unknown) => Promise.reject(inBody(error)));
    c.header('location', `/rules/${created.id}`);
    noteTarget(created.id);
    return c.json(created, 201);
  });
}

function listRules({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/rules',
    operationId: 'listRules',
    summary: 'Rules of a ground, oldest first, by pages',
    tags: TAGS,
    params: GroundParams,
    query: RuleListQuery,
    responses: { 200: { description: 'a page of rules; `next` is the cursor of the following page', content: { [JSON_TYPE]: RulePage } } },
    errors: [403, 404],
  }, async (c, { principal, params, query }) => {
    requireMemberToken(principal, 'manage rules');
    const ground = await access.ground(principal, params.groundId);
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: RuleQuery = { limit: limit + 1 };
    if (query.cursor !== undefined) {
      const after = CURSORS.decode(query.cursor);
      request.after = { createdAt: after.createdAt, id: after.key };
    }
    const rows = await deps.registry.listRules(ground.id, request);
    return c.json(CURSORS.page(rows, limit, (r) => r.id));
  });
}

function getRule(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/rules/{id}',
    operationId: 'getRule',
    summary: 'A rule',
    tags: TAGS,
    params: RuleParams,
    responses: { 200: { description: 'the rule', content: { [JSON_TYPE]: RuleSchema } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => c.json(await ruleFor(edge, principal, params.id, 'viewer')));
}

function updateRule(edge: EdgeContext): void {
  edge.router.route({
    methods: ['patch'],
    path: '/rules/{id}',
    operationId: 'updateRule',
    summary: 'Change a rule; `devices`, `for` or `clear` null removes it',
    tags: TAGS,
    params: RuleParams,
    body: { required: true, content: { [JSON_TYPE]: RulePatch } },
    responses: { 200: { description: 'the rule', content: { [JSON_TYPE]: RuleSchema } } },
    errors: [403, 404, 413, 415, 422],
  }, async (c, { principal, params }) => {
    const rule = await ruleFor(edge, principal, params.id, 'editor');
    const patch = check<RulePatch>(RulePatch, withCanonicalField(await readJsonBody(c.req.raw, edge.maxBodyBytes), 'name'), 'body');
    // The rule as it would be, checked whole: a new asset must still fit the condition, and so on.
    const next: RuleShape = {
      asset: patch.asset ?? rule.asset,
      condition: patch.condition ?? rule.condition,
      actions: patch.actions ?? rule.actions,
    };
    const devices = patch.devices === undefined ? rule.devices : patch.devices ?? undefined;
    const forDuration = patch.for === undefined ? rule.for : patch.for ?? undefined;
    const clear = patch.clear === undefined ? rule.clear : patch.clear ?? undefined;
    if (devices !== undefined) next.devices = devices;
    if (forDuration !== undefined) next.for = forDuration;
    if (clear !== undefined) next.clear = clear;
    await checkAgainstGround(edge, rule.groundId, next);
    const updated = await edge.deps.registry.updateRule(rule.id, patch).catch((error: unknown) => Promise.reject(inBody(error)));
    return c.json(updated);
  });
}

function deleteRule(edge: EdgeContext): void {
  edge.router.route({
    methods: ['delete'],
    path: '/rules/{id}',
    operationId: 'deleteRule',
    summary: 'Delete a rule',
    tags: TAGS,
    params: RuleParams,
    responses: { 204: { description: 'deleted' } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    const rule = await ruleFor(edge, principal, params.id, 'editor');
    await edge.deps.registry.deleteRule(rule.id);
    return c.body(null, 204);
  });
}
