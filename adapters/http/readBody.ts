/**
 * Reads a request body with a size limit. A declared Content-Length over the limit is refused
 * before reading; a body without one (chunked) is counted while it streams and abandoned as soon
 * as it passes the limit, so a client cannot make the edge buffer more than `maxBytes`.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { FleetError } from '../../engine/kernel/errors.ts';

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
