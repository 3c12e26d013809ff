/**
 * A device's recent rejections (spec-silent, DESIGN.md §5), so a maker can see why a value was
 * dropped: uplink refusals of every channel by default, refused command records on asking.
 */
import { isoTime } from '../../../../engine/kernel/isoTime.ts';
import { DeviceParams, RejectionList, RejectionsQuery } from '../../../../schemas/edge.ts';
import { Channel } from '../../../../schemas/messages.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { queryTime } from '../../request/check.ts';

const JSON_TYPE = 'application/json';
const DEFAULT_LIMIT = 100;
/** What /rejections lists by default: why a value was dropped, on any uplink channel (not refused commands). */
const UPLINK_CHANNELS: readonly string[] = Channel.anyOf.map((literal) => literal.const);

export function rejectionRoutes({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/device/{id}/rejections',
    operationId: 'getDeviceRejections',
    summary: 'Recent rejections of a device, newest first: why a value was dropped',
    description: 'Uplink refusals of every channel by default; `channel=command` lists the refused command records instead, '
      + 'so that neither pushes the other out of the list.',
    tags: ['states'],
    params: DeviceParams,
    query: RejectionsQuery,
    responses: { 200: { description: 'the rejections', content: { [JSON_TYPE]: RejectionList } } },
    errors: [404],
  }, async (c, { principal, params, query }) => {
    const device = await access.device(principal, params.id, 'read');
    const rows = await deps.rejections.recent(device.id, {
      limit: query.limit ?? DEFAULT_LIMIT, before: queryTime(query.before, 'before'), channels: query.channel === undefined ? UPLINK_CHANNELS : [query.channel],
    });
    return c.json({
      items: rows.map((r) => {
        const item: Record<string, unknown> = { at: isoTime(r.rejectedAt), code: r.code, reason: r.reason, uplinkId: r.uplinkId, channel: r.channel };
        if (r.asset !== '') item.asset = r.asset;
        if (r.item !== undefined) item.item = r.item;
        return item;
      }),
    });
  });
}
