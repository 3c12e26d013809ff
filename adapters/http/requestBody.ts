/**
 * Request bodies at the edge: media type checks (415), bounded reads (413, readBody.ts), and JSON
 * syntax (400 MALFORMED_JSON) of the management routes' bodies. Uplink bodies are checked by the
 * device actor's own code instead (previewUplink.ts).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { readBody } from './readBody.ts';
import { isPlainObject } from '../../engine/kernel/isPlainObject.ts';
export { isPlainObject };

export type BodyFormat = 'json' | 'cbor';

const MEDIA_TYPES: Record<string, BodyFormat> = Object.assign(Object.create(null) as Record<string, BodyFormat>, {
  'application/json': 'json',
  'application/cbor': 'cbor',
});

/**
 * The body format named by a Content-Type header, when it is one of `allowed`. A charset other
 * than UTF-8 on JSON is refused (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
 */
export function bodyFormat(header: string | undefined, allowed: readonly BodyFormat[]): BodyFormat {
  // What nearly every client sends: the media type alone, as written here.
  const exact = header === undefined ? undefined : MEDIA_TYPES[header];
  if (exact !== undefined && allowed.includes(exact)) return exact;
  const names = allowed.map((f) => `application/${f}`).join(' or ');
  if (header === undefined || header.trim() === '') {
    throw new FleetError('UNSUPPORTED_CONTENT_TYPE', `content-type required: ${names}`);
  }
  const [type, ...params] = header.split(';');
  const format = MEDIA_TYPES[type.trim().toLowerCase()];
  if (format === undefined || !allowed.includes(format)) {
    throw new FleetError('UNSUPPORTED_CONTENT_TYPE', `unsupported content-type "${type.trim().slice(0, 100)}"; expected ${names}`);
  }
  for (const param of params) {
    const [name, value = ''] = param.split('=');
    if (name.trim().toLowerCase() === 'charset' && !/^"?utf-8"?$/i.test(value.trim())) {
      throw new FleetError('UNSUPPORTED_CONTENT_TYPE', `unsupported charset "${value.trim().slice(0, 40)}"; application/json must be UTF-8`);
    }
  }
  return format;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON text → value; 400 MALFORMED_JSON on empty bodies, invalid UTF-8 or syntax errors. */
export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) throw new FleetError('MALFORMED_JSON', 'empty body; expected JSON');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (cause) {
    throw new FleetError('MALFORMED_JSON', 'body is not valid UTF-8', { cause });
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new FleetError('MALFORMED_JSON', `body is not valid JSON: ${(cause as Error).message.slice(0, 200)}`, { cause });
  }
}

/** A JSON request body of a management route: application/json, bounded, parsed. */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  bodyFormat(request.headers.get('content-type') ?? undefined, ['json']);
  return parseJson(await readBody(request, maxBytes));
}

