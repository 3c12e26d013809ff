/**
 * Request bodies at the edge: the media type (415), a bounded read (413), and JSON syntax (400
 * MALFORMED_JSON). A declared Content-Length over the limit is refused before reading; a body
 * without one (chunked) is counted while it streams and abandoned as soon as it passes the limit,
 * so a client cannot make the edge buffer more than `maxBytes`. Uplink bodies are read here as
 * bytes and parsed by the engine's admission step (engine/uplink/UplinkAdmission.ts) instead.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { FleetError } from '../../../engine/kernel/errors.ts';

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

const DIGITS = /^[0-9]{1,15}$/;

function tooLarge(maxBytes: number): FleetError {
  // The rest of the body is not read: ask the server to drop the connection instead of draining it.
  return new FleetError('PAYLOAD_TOO_LARGE', `request body larger than ${maxBytes} bytes`, {
    detail: { closeConnection: true },
  });
}

/**
 * Throws PAYLOAD_TOO_LARGE (413) over the limit, BAD_REQUEST when the body cannot be read (client
 * gone). `incoming` is Node's request when the edge runs on @hono/node-server (`c.env.incoming`):
 * its chunks are read as they are, without turning the body into a web stream first (which costs
 * more than everything else an uplink needs).
 */
export async function readBody(request: Request, maxBytes: number, incoming?: IncomingMessage): Promise<Uint8Array> {
  try {
    const declared = declaredLength(request, maxBytes);
    if (incoming !== undefined && !incoming.readableDidRead && !incoming.readableEnded) {
      return arrived(incoming, declared) ?? await readIncoming(incoming, maxBytes);
    }
    return await read(request, maxBytes, declared);
  } catch (error) {
    if (error instanceof FleetError) throw error;
    throw new FleetError('BAD_REQUEST', 'request body could not be read', { cause: error });
  }
}

/** The declared Content-Length, refused at once when malformed or over the limit. */
function declaredLength(request: Request, maxBytes: number): number | undefined {
  const declared = request.headers.get('content-length');
  if (declared === null) return undefined;
  if (!DIGITS.test(declared)) throw new FleetError('BAD_REQUEST', 'malformed content-length');
  if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
  return Number(declared);
}

/**
 * The whole body when it is already buffered (a small body arrives with, or just after, the
 * headers, before the route gets to it), taken without waiting for events; undefined otherwise.
 * All of it is there once the declared length is buffered: the parser never delivers more.
 */
function arrived(incoming: IncomingMessage, declared: number | undefined): Uint8Array | undefined {
  if (declared === undefined || declared === 0 || incoming.readableLength !== declared || incoming.readableEncoding !== null) return undefined;
  const body = incoming.read() as Buffer | null;
  if (body === null || body.byteLength !== declared) throw new FleetError('BAD_REQUEST', 'request body could not be read');
  // Let the stream run to its end (nothing is left to read), as the server expects of a read
  // request: one it sees unfinished after the response is drained on timers.
  incoming.resume();
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

/** Node's request body, counted as it arrives; abandoned past the limit. */
function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const done = () => {
      incoming.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxBytes) {
        done();
        incoming.pause();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
      resolve(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
    };
    const onError = (error: Error) => {
      done();
      reject(new FleetError('BAD_REQUEST', 'request body could not be read', { cause: error }));
    };
    const onClose = () => {
      if (incoming.readableEnded) return;
      done();
      reject(new FleetError('BAD_REQUEST', 'request body could not be read: the client went away'));
    };
    incoming.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

async function read(request: Request, maxBytes: number, declared: number | undefined): Promise<Uint8Array> {
  if (declared !== undefined) {
    // The HTTP parser never delivers more than the declared length, so this read is bounded.
    return new Uint8Array(await request.arrayBuffer());
  }
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** Node's request behind a Hono context, when the edge runs on @hono/node-server. */
export function incomingOf(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}
