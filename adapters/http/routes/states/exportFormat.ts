/**
 * Which representation a request asks for (docs/analytics.md "Export"): `?format=` first, else the
 * `Accept` header's most preferred type among those offered (q-values honoured, q=0 refused).
 * A `format` this edge does not know, or an `Accept` naming only types it does not offer, is
 * NOT_ACCEPTABLE (406) with the `allowed` formats.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { EXPORT_FORMATS, type ExportFormat } from '../../../../engine/ports/stateExport.ts';

export const EXPORT_MEDIA_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv',
  ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
};

const EXTENSIONS: Record<ExportFormat, string> = { csv: 'csv', ndjson: 'ndjson', parquet: 'parquet' };

export function notAcceptable(message: string, allowed: readonly string[]): FleetError {
  return new FleetError('NOT_ACCEPTABLE', message, { detail: { allowed: [...allowed] } });
}

/**
 * The chosen format. `fallback` answers a request that asks for nothing in particular (no Accept,
 * any type): `json` on the history route, whose JSON page stays its default; there an Accept naming
 * only other types also gets the JSON, as it always did (`strict` false). An export-only route is
 * `strict`: such an Accept is NOT_ACCEPTABLE.
 */
export function chooseFormat<F extends string>(format: string | undefined, accept: string | undefined, fallback: F, strict: boolean): ExportFormat | F {
  const names = [...new Set<string>([fallback, ...EXPORT_FORMATS])];
  if (format !== undefined) {
    if (!names.includes(format)) throw notAcceptable(`format: one of ${names.join(', ')}`, names);
    return format as ExportFormat | F;
  }
  if (accept === undefined || accept.trim() === '') return fallback;
  const offered: Record<string, ExportFormat | F> = { '*/*': fallback };
  if (fallback === 'json') {
    offered['application/json'] = fallback;
    offered['application/*'] = fallback;
  }
  for (const f of EXPORT_FORMATS) offered[EXPORT_MEDIA_TYPES[f]] = f;
  let best: { format: ExportFormat | F; q: number; specific: boolean } | undefined;
  for (const part of accept.slice(0, 1024).split(',')) {
    const [type, ...params] = part.split(';').map((x) => x.trim().toLowerCase());
    const chosen = offered[type ?? ''];
    if (chosen === undefined) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!(q > 0 && q <= 1)) continue;
    const specific = !type!.includes('*');
    if (best === undefined || q > best.q || (q === best.q && specific && !best.specific)) best = { format: chosen, q, specific };
  }
  if (best !== undefined) return best.format;
  if (!strict) return fallback;
  throw notAcceptable('Accept names no type this resource has', Object.keys(offered).filter((t) => !t.includes('*')));
}

/** `attachment; filename=…` for an export: the name is made of checked ids and a UTC time only. */
export function attachment(stem: string, format: ExportFormat, now: number): string {
  const at = new Date(now).toISOString().replace(/[:.]/g, '-');
  return `attachment; filename="${stem}-${at}.${EXTENSIONS[format]}"`;
}
