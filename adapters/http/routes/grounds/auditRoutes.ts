/**
 * GET /ground/{groundId}/audit (owner; docs/grounds.md "Audit log"): the changes made to the ground,
 * newest first, by pages: `next` is the `before` of the following (older) page, base64url of
 * `at.seq`, opaque to clients. Entries reach the log within the recorder's interval (200 ms).
 */
import { GroundParams } from '../../../../schemas/edge.ts';
import { AuditListQuery, AuditPage } from '../../../../schemas/audit.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { listCursors } from '../listCursor.ts';

const JSON_TYPE = 'application/json';
const DEFAULT_PAGE = 100;
const CURSORS = listCursors('[1-9][0-9]{0,14}');

export function auditRoutes({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/audit',
    operationId: 'listAudit',
    summary: 'The changes made to a ground — who, when, the operation, its target and its result — newest first, by pages (owner)',
    tags: ['grounds'],
    params: GroundParams,
    query: AuditListQuery,
    responses: { 200: { description: 'a page of entries; `next` is the `before` of the following page', content: { [JSON_TYPE]: AuditPage } } },
    errors: [403, 404, 422],
  }, async (c, { principal, params, query }) => {
    const ground = await access.ground(principal, params.groundId, 'owner');
    const limit = query.limit ?? DEFAULT_PAGE;
    let before: { at: number; seq: number } | undefined;
    if (query.before !== undefined) {
      const cursor = CURSORS.decode(query.before, 'query.before');
      before = { at: cursor.createdAt, seq: Number(cursor.key) };
    }
    const rows = await deps.registry.listAudit(ground.id, { limit: limit + 1, ...(before === undefined ? {} : { before }) });
    const page = CURSORS.page(rows.map((row) => ({ ...row, createdAt: row.at })), limit, (row) => String(row.seq));
    c.header('cache-control', 'no-store');
    const body: AuditPage = { items: page.items.map(({ seq: _seq, createdAt: _createdAt, ...entry }) => entry) };
    if (page.next !== undefined) body.next = page.next;
    return c.json(body);
  });
}
