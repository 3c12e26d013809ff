/**
 * `/console`: the web console served by the edge. Static files only, from the table
 * of consoleAssets.ts; the console talks to the same API as every other client with
 * the token it keeps in sessionStorage, so these routes need no authentication and see no token.
 * Every answer carries a strict Content-Security-Policy (no inline script but the hashed import
 * map, connect-src 'self'), no referrer and no framing.
 */
import type { Hono } from 'hono';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { CONSOLE_ROOT, type ConsoleAssets, loadConsoleAssets } from './consoleAssets.ts';
import { problemResponse } from '../problemResponse.ts';

export function consoleRoutes(app: Hono, options: { assets?: ConsoleAssets } = {}): void {
  let assets = options.assets;
  app.get('/console', (c) => c.redirect(CONSOLE_ROOT, 301));
  app.get(`${CONSOLE_ROOT}*`, (c) => {
    assets ??= loadConsoleAssets();
    // The raw path, not a decoded one: `/console/%2e%2e/x` is simply not a key.
    const path = new URL(c.req.url).pathname;
    const file = assets.files.get(path);
    const security = {
      'content-security-policy': assets.csp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
    };
    if (file === undefined) {
      const response = problemResponse(new FleetError('NOT_FOUND', `no console file ${path.slice(0, 200)}`), path.slice(0, 200));
      for (const [name, value] of Object.entries(security)) response.headers.set(name, value);
      return response;
    }
    const headers: Record<string, string> = {
      ...security,
      'content-type': file.type,
      etag: file.etag,
      // Revalidated on every load (an upgrade shows at once); a 304 costs a round trip, no body.
      'cache-control': 'no-cache',
      vary: 'accept-encoding',
    };
    if (c.req.header('if-none-match') === file.etag) return c.body(null, 304, headers);
    const gzip = /\bgzip\b/.test(c.req.header('accept-encoding') ?? '');
    if (gzip) headers['content-encoding'] = 'gzip';
    const body = gzip ? file.gzip : file.body;
    return c.body(new Uint8Array(body).buffer, 200, headers);
  });
}
