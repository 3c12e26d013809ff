/**
 * Alarms of a ground (docs/rules.md): listed newest first with filters, read, acknowledged and
 * cleared by its members with a user token. For anyone else an alarm does not exist (404, as an
 * unknown id).
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { requireMemberToken } from '../../../../engine/access/groundRoles.ts';
import type { GroundRole, Principal } from '../../../../engine/ports/registry.ts';
import type { Alarm, AlarmQuery } from '../../../../engine/ports/alarmRegistry.ts';
import { ID_PATTERN } from '../../../../schemas/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { Alarm as AlarmSchema, AlarmListQuery, AlarmPage, AlarmParams } from '../../../../schemas/alarms.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { listCursors } from '../listCursor.ts';
import { memberResource } from '../memberResource.ts';

const JSON_TYPE = 'application/json';
const TAGS = ['alarms'];
const DEFAULT_PAGE = 100;
const CURSORS = listCursors(ID_PATTERN.slice(1, -1));

export function alarmRoutes(edge: EdgeContext): void {
  listAlarms(edge);
  getAlarm(edge);
  acknowledgeAlarm(edge);
  clearAlarm(edge);
}

function memberTokenOnly(principal: Principal): void {
  requireMemberToken(principal, 'read or change alarms');
}

/** The alarm, when the principal is a member of its ground with `needed` (memberResource). */
function alarmFor(edge: EdgeContext, principal: Principal, alarmId: string, needed: GroundRole): Promise<Alarm> {
  return memberResource(edge, principal, 'alarm', alarmId, (id) => edge.deps.registry.getAlarm(id), needed);
}

function listAlarms({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/alarms',
    operationId: 'listAlarms',
    summary: 'Alarms of a ground, newest first, by pages; `status`, `acknowledged` and `deviceId` filter them',
    tags: TAGS,
    params: GroundParams,
    query: AlarmListQuery,
    responses: { 200: { description: 'a page of alarms; `next` is the cursor of the following page', content: { [JSON_TYPE]: AlarmPage } } },
    errors: [403, 404],
  }, async (c, { principal, params, query }) => {
    memberTokenOnly(principal);
    const ground = await access.ground(principal, params.groundId);
    const limit = query.limit ?? DEFAULT_PAGE;
    const request: AlarmQuery = { limit: limit + 1 };
    if (query.status !== undefined) request.status = query.status;
    if (query.acknowledged !== undefined) request.acknowledged = query.acknowledged === 'true';
    if (query.deviceId !== undefined) request.deviceId = query.deviceId;
    if (query.cursor !== undefined) {
      const before = CURSORS.decode(query.cursor);
      request.before = { startedAt: before.createdAt, id: before.key };
    }
    const rows = await deps.registry.listAlarms(ground.id, request);
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return c.json(rows.length > limit ? { items, next: Buffer.from(`${last.startedAt}.${last.id}`, 'utf8').toString('base64url') } : { items });
  });
}

function getAlarm(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/alarms/{id}',
    operationId: 'getAlarm',
    summary: 'An alarm',
    tags: TAGS,
    params: AlarmParams,
    responses: { 200: { description: 'the alarm', content: { [JSON_TYPE]: AlarmSchema } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => c.json(await alarmFor(edge, principal, params.id, 'viewer')));
}

function acknowledgeAlarm(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/alarms/{id}/acknowledge',
    operationId: 'acknowledgeAlarm',
    summary: 'Acknowledge an alarm (an acknowledged one keeps its first acknowledgement)',
    tags: TAGS,
    params: AlarmParams,
    responses: { 200: { description: 'the alarm', content: { [JSON_TYPE]: AlarmSchema } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    const alarm = await alarmFor(edge, principal, params.id, 'editor');
    const { alarm: acknowledged, changed } = await edge.deps.registry.acknowledgeAlarm(alarm.id, principal.subjectId, edge.deps.clock.now());
    if (changed) edge.deps.alarmChanged?.('acknowledged', acknowledged, principal.subjectId);
    return c.json(acknowledged);
  });
}

function clearAlarm(edge: EdgeContext): void {
  edge.router.route({
    methods: ['post'],
    path: '/alarms/{id}/clear',
    operationId: 'clearAlarm',
    summary: 'Clear an alarm (a cleared one is unchanged); while its condition holds, the next state raises a new one',
    tags: TAGS,
    params: AlarmParams,
    responses: { 200: { description: 'the alarm', content: { [JSON_TYPE]: AlarmSchema } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    const alarm = await alarmFor(edge, principal, params.id, 'editor');
    const { alarm: cleared, changed } = await edge.deps.registry.clearAlarm(alarm.id, edge.deps.clock.now());
    if (changed) edge.deps.alarmChanged?.('cleared', cleared, principal.subjectId);
    return c.json(cleared);
  });
}
