/**
 * Reads a request body with a size limit. A declared Content-Length over the limit is refused
 * before reading; a body without one (chunked) is counted while it streams and abandoned as soon
 * as it passes the limit, so a client cannot make the edge buffer more than `maxBytes`.
 */
import { FleetError } from '../../engine/kernel/errors.ts';

const DIGITS = /^[0-9]{1,15}$/;

function tooLarge(maxBytes: number): FleetError {
  // The rest of the body is not read: ask the server to drop the connection instead of draining it.
  return new FleetError('PAYLOAD_TOO_LARGE', `request body larger than ${maxBytes} bytes`, {
    detail: { closeConnection: true },
  });
}

/** Throws PAYLOAD_TOO_LARGE (413) over the limit, BAD_REQUEST when the body cannot be read (client gone). */
export async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  try {
    return await read(request, maxBytes);
  } catch (error) {
    if (error instanceof FleetError) throw error;
    throw new FleetError('BAD_REQUEST', 'request body could not be read', { cause: error });
  }
}

async function read(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null) {
    if (!DIGITS.test(declared)) throw new FleetError('BAD_REQUEST', 'malformed content-length');
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
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
