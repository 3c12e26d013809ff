/**
 * Serves a Hono app on Node's HTTP server (@hono/node-server). Port 0 picks a free port; the port
 * actually bound is returned. close() stops accepting, lets requests in progress finish, and drops
 * idle keep-alive connections so it does not wait for clients to hang up.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
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
  });
}
