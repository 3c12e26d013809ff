/**
 * Exports of stored states as files (docs/analytics.md "Export"): the history route's CSV, NDJSON
 * and Parquet (historyRoutes.ts asks here) and GET /ground/{groundId}/export. The bytes are the
 * store's engine's own (engine/ports/stateExport.ts), passed on as they come: memory stays the
 * same whatever the number of rows. A client that goes away returns the stream, which stops the
 * engine's query and frees its slot.
 */
import Type from 'typebox';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { MAX_EXPORT_ASSETS, MAX_EXPORT_DEVICES, type ExportFormat, type ExportSelection } from '../../../../engine/ports/stateExport.ts';
import type { Device } from '../../../../engine/ports/registry.ts';
import { ASSET_NAME_PATTERN, ID_PATTERN } from '../../../../schemas/registry.ts';
import { ExportQuery, GroundParams } from '../../../../schemas/edge.ts';
import { DEVICE_NEED_ROLE } from '../../EdgeAccess.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { invalidField, queryTime } from '../../request/check.ts';
import { attachment, chooseFormat, EXPORT_MEDIA_TYPES } from './exportFormat.ts';

const PAGE = 1000;
const ID = new RegExp(ID_PATTERN);
const ASSET = new RegExp(ASSET_NAME_PATTERN);

/** The export's file as a response: the engine's bytes, pulled as the client reads. */
export async function exportResponse(edge: EdgeContext, request: Request, selection: Omit<ExportSelection, 'signal'>, stem: string): Promise<Response> {
  const exports = edge.deps.exports;
  if (exports === undefined) {
    throw new FleetError('EXPORT_UNAVAILABLE', 'this edge has no state export', { detail: { retryAfter: 1 } });
  }
  // A format the store does not write (Parquet on 18.16) is its NOT_ACCEPTABLE, with what it writes.
  const chunks = await exports.exportStates({ ...selection, signal: request.signal });
  const iterator = chunks[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        // Headers are gone: the answer is cut short, which the client sees as a broken transfer.
        edge.deps.logger?.error('state export failed while streaming', { error: (error as Error).message });
        controller.error(error);
      }
    },
    async cancel() {
      await iterator.return?.();
    },
  }, { highWaterMark: 0 });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': selection.format === 'csv' ? `${EXPORT_MEDIA_TYPES.csv}; charset=utf-8; header=present` : EXPORT_MEDIA_TYPES[selection.format],
      'content-disposition': attachment(stem, selection.format, edge.deps.clock.now()),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    },
  });
}

const EXPORT_RESPONSE = {
  200: {
    description: 'the states as a file: CSV (a header line, then one line per state), NDJSON (one JSON object per line) or Parquet',
    content: {
      [EXPORT_MEDIA_TYPES.csv]: Type.String(),
      [EXPORT_MEDIA_TYPES.ndjson]: Type.String(),
      [EXPORT_MEDIA_TYPES.parquet]: Type.String({ format: 'binary' }),
    },
  },
};

export function exportRoutes(edge: EdgeContext): void {
  edge.router.route({
    methods: ['get'],
    path: '/ground/{groundId}/export',
    operationId: 'exportGroundStates',
    summary: 'The states of a ground\'s devices over [from, to) as CSV, NDJSON or Parquet (viewer)',
    description: 'As a history read of each device. `format` or `Accept` chooses the file (default CSV); rows come in no '
      + 'promised order. At most 4 exports run at once per process: one more is answered 503 with Retry-After.',
    tags: ['states'],
    params: GroundParams,
    query: ExportQuery,
    responses: EXPORT_RESPONSE,
    errors: [403, 404, 406, 422, 503],
  }, async (c, { principal, params, query }) => {
    const ground = await edge.access.ground(principal, params.groundId, DEVICE_NEED_ROLE.read);
    const format = chooseFormat(query.format, c.req.header('accept'), 'csv', true) as ExportFormat;
    const from = queryTime(query.from, 'from');
    const to = queryTime(query.to, 'to');
    if (from !== undefined && to !== undefined && from >= to) throw invalidField('query.from', 'must be before `to`');
    const assets = query.assets === undefined ? undefined : listOf(query.assets, 'assets', MAX_EXPORT_ASSETS, ASSET, 'an asset name');
    const devices = query.devices === undefined ? await devicesOf(edge, ground.id) : await named(edge, ground.id, listOf(query.devices, 'devices', MAX_EXPORT_DEVICES, ID, 'a device id'));
    return exportResponse(edge, c.req.raw, { devices, assets, from, to, format }, `ground-${ground.id}`);
  });
}

/** A comma-separated list: 1..max distinct entries, each matching `pattern`. */
function listOf(text: string, field: string, max: number, pattern: RegExp, what: string): string[] {
  const items = text.split(',');
  if (items.length > max) throw invalidField(`query.${field}`, `at most ${max} entries`);
  for (const [i, item] of items.entries()) {
    if (!pattern.test(item)) throw invalidField(`query.${field}`, `entry ${i + 1} is not ${what}`);
  }
  return [...new Set(items)];
}

/** The devices named, each of this ground (one that is not, or does not exist, is refused alike). */
async function named(edge: EdgeContext, groundId: string, ids: string[]): Promise<string[]> {
  for (const id of ids) {
    const device = await edge.access.deviceInGround(groundId, id);
    if (device === undefined) throw invalidField('query.devices', `${id} is not a device of this ground`);
  }
  return ids;
}

/** Every device of the ground, when there are at most MAX_EXPORT_DEVICES; else the client names them. */
async function devicesOf(edge: EdgeContext, groundId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let after: Device | undefined; ;) {
    const page = await edge.deps.registry.listDevices(groundId, { limit: PAGE, ...(after === undefined ? {} : { after: { createdAt: after.createdAt, id: after.id } }) });
    ids.push(...page.map((d) => d.id));
    if (ids.length > MAX_EXPORT_DEVICES) throw invalidField('query.devices', `the ground has more than ${MAX_EXPORT_DEVICES} devices: name at most ${MAX_EXPORT_DEVICES} in \`devices\``);
    if (page.length < PAGE) break;
    after = page[page.length - 1];
  }
  if (ids.length === 0) throw invalidField('query.devices', 'the ground has no devices');
  return ids;
}
