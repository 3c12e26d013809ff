/**
 * State exports for embedded edge workers (docs/scaling.md "Edge workers"): the primary holds chDB,
 * and the cluster channel carries calls, not streams, so the primary serves its exports on a
 * loopback HTTP listener of its own, and each worker's export port (remoteExports) asks it there:
 * the worker has authorised and checked the request; the primary runs the export through its store
 * (the 4-at-once limit is the primary's, for all its workers) and streams the engine's bytes; a
 * worker whose client left closes its request, which returns the primary's stream and stops the query.
 *
 * The listener takes a secret made at start and handed to workers over the cluster channel only;
 * it binds 127.0.0.1 and answers nothing else.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FleetError, isFleetError, type ErrorCode } from '../engine/kernel/errors.ts';
import type { ExportSelection, StateExport } from '../engine/ports/stateExport.ts';

export interface ExportRelayAddress {
  port: number;
  secret: string;
}

const SECRET_HEADER = 'x-fleetstream-export-relay';
const MAX_BODY = 64 * 1024;

/** In the primary: the listener over `exports`. */
export async function serveExportRelay(exports: StateExport): Promise<{ address: ExportRelayAddress; close(): Promise<void> }> {
  const secret = randomBytes(32).toString('hex');
  const server = createServer((req, res) => void relay(exports, secret, req, res));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    address: { port, secret },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function relay(exports: StateExport, secret: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const given = Buffer.from(String(req.headers[SECRET_HEADER] ?? ''));
  const wanted = Buffer.from(secret);
  if (req.method !== 'POST' || given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
    res.writeHead(404).end();
    return;
  }
  let iterator: AsyncIterator<Uint8Array> | undefined;
  const abort = new AbortController();
  res.on('close', () => {
    abort.abort();
    void iterator?.return?.();
  });
  try {
    const parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw new FleetError('PAYLOAD_TOO_LARGE', 'export relay: selection too large');
      parts.push(chunk as Buffer);
    }
    if (req.url === '/formats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await exports.exportFormats()));
      return;
    }
    const selection = JSON.parse(Buffer.concat(parts).toString('utf8')) as Omit<ExportSelection, 'signal'>;
    iterator = (await exports.exportStates({ ...selection, signal: abort.signal }))[Symbol.asyncIterator]();
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (!res.write(next.value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      if (res.destroyed) return;
    }
    res.end();
  } catch (error) {
    if (res.headersSent) {
      res.destroy(error as Error);
      return;
    }
    const fleet = isFleetError(error) ? error : new FleetError('INTERNAL', 'export relay failed', { cause: error });
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ code: fleet.code, message: fleet.message, detail: fleet.detail }));
  }
}

/** In a worker: the export port, through the primary's listener (its address asked once, over the channel). */
export function remoteExports(address: () => Promise<ExportRelayAddress>): StateExport {
  let known: Promise<ExportRelayAddress> | undefined;
  const ask = async (path: string, body: unknown, signal?: AbortSignal): Promise<Response> => {
    known ??= address().catch((error: unknown) => {
      known = undefined;
      throw error;
    });
    const { port, secret } = await known;
    let response: Response;
    try {
      response = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { [SECRET_HEADER]: secret, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
    } catch (error) {
      throw new FleetError('UNAVAILABLE', `the main process's exports cannot be reached: ${(error as Error).message}`, { cause: error });
    }
    if (response.ok) return response;
    const failure = await response.json().catch(() => undefined) as { code?: ErrorCode; message?: string; detail?: Record<string, unknown> } | undefined;
    throw new FleetError(failure?.code ?? 'UNAVAILABLE', failure?.message ?? `export relay answered ${response.status}`, { detail: failure?.detail });
  };
  return {
    async exportFormats() {
      return (await (await ask('/formats', {})).json()) as Awaited<ReturnType<StateExport['exportFormats']>>;
    },
    async exportStates(selection) {
      const { signal, ...rest } = selection;
      const response = await ask('/export', rest, signal);
      const reader = response.body!.getReader();
      const iterator: AsyncIterator<Uint8Array> = {
        async next() {
          try {
            const { done, value } = await reader.read();
            return done ? { done: true, value: undefined } : { done: false, value };
          } catch (error) {
            throw new FleetError('UNAVAILABLE', `the export was cut: ${(error as Error).message}`, { cause: error });
          }
        },
        async return() {
          await reader.cancel().catch(() => undefined);
          return { done: true, value: undefined };
        },
      };
      return { [Symbol.asyncIterator]: () => iterator };
    },
  };
}
