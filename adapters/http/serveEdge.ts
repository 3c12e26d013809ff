/**
 * Serves a Hono app on Node's HTTP server (@hono/node-server). Port 0 picks a free port; the port
 * actually bound is returned. close() stops accepting, lets requests in progress finish, and drops
 * idle keep-alive connections so it does not wait for clients to hang up.
 *
 * Requests Node refuses before any route sees them (malformed framing, a head over 16 KiB, a
 * request not sent in time) are answered by the `clientError` handler with problem+json too, like
 * every other error of the API, instead of Node's bare `400 Bad Request` without a body.
 */
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES, type Server } from 'node:http';
import { FleetError } from '../../engine/kernel/errors.ts';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problemResponse.ts';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface ServeEdgeOptions {
  /** 0: any free port. */
  port: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  /** Longest a client may take to send a whole request, ms (slow senders hold sockets). Default 30 000. */
  requestTimeoutMs?: number;
  /** Longest a client may take to send the request headers, ms. Default 10 000. */
  headersTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open, ms. Default 5 000. */
  keepAliveTimeoutMs?: number;
  /** Connection upgrades (the live WebSocket); absent: upgrade requests are refused. */
  onUpgrade?(request: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface ServedEdge {
  port: number;
  close(): Promise<void>;
}

export function serveEdge(app: Hono, options: ServeEdgeOptions): Promise<ServedEdge> {
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: app.fetch,
      port: options.port,
      hostname: options.hostname ?? '127.0.0.1',
      serverOptions: {
        requestTimeout: options.requestTimeoutMs ?? 30_000,
        headersTimeout: options.headersTimeoutMs ?? 10_000,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      },
    }, (info: AddressInfo) => {
      server.off('error', reject);
      resolve({
        port: info.port,
        close: () => new Promise<void>((done, fail) => {
          const http = server as Server;
          http.close((error) => (error ? fail(error) : done()));
          http.closeIdleConnections();
        }),
      });
    });
    server.once('error', reject);
    (server as Server).on('clientError', answerClientError);
    if (options.onUpgrade !== undefined) (server as Server).on('upgrade', options.onUpgrade);
  });
}

/** Node's parser errors (llhttp `HPE_*` codes) and timeouts as FleetErrors. */
function clientErrorOf(error: Error & { code?: string }): FleetError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new FleetError('HEADERS_TOO_LARGE', 'request line and headers are larger than 16 KiB');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new FleetError('REQUEST_TIMEOUT', 'the request was not received in time');
    default:
      return new FleetError('BAD_REQUEST', `malformed HTTP request${error.code ? ` (${error.code})` : ''}: ${error.message.slice(0, 200)}`);
  }
}

/**
 * Writes a problem+json answer on the socket and closes it (the rest of its bytes cannot be
 * framed). A socket that is gone, or that is already sending a response, is only destroyed.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (error.code === 'ECONNRESET' || !socket.writable || busy) {
    socket.destroy();
    return;
  }
  const fleet = clientErrorOf(error);
  const body = JSON.stringify(toProblem(fleet));
  socket.end(
    `HTTP/1.1 ${fleet.status} ${STATUS_CODES[fleet.status] ?? 'Error'}\r\n`
    + `content-type: ${PROBLEM_CONTENT_TYPE}\r\n`
    + `content-length: ${Buffer.byteLength(body)}\r\n`
    + 'cache-control: no-store\r\n'
    + 'connection: close\r\n\r\n'
    + body,
  );
}
