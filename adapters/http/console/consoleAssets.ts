/**
 * The web console's files: the console/ folder of this package plus the few vendor
 * builds it imports, each named by exact URL. Nothing here maps a request path onto the file
 * system: a URL either is a key of the table or is answered 404, so `..`, encoded slashes and
 * other traversal tricks have nothing to reach. Files are read once and kept with their gzip form
 * (the whole console is a few dozen KiB).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export interface ConsoleAsset {
  body: Buffer;
  gzip: Buffer;
  type: string;
  etag: string;
}

export interface ConsoleAssets {
  /** By URL path (`/console/app.js`); `/console/` is the page. */
  files: ReadonlyMap<string, ConsoleAsset>;
  /** The Content-Security-Policy of every console response. */
  csp: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export const CONSOLE_ROOT = '/console/';

/** Vendor files by URL name: package, file beside the package's resolved entry point. */
const VENDOR: Record<string, [string, string]> = {
  'preact.js': ['preact', 'preact.module.js'],
  'hooks.js': ['preact/hooks', 'hooks.module.js'],
  'htm.js': ['htm', 'htm.module.js'],
  // uPlot ships no minified ES module; its minified classic build defines the global `uPlot`.
  'uplot.js': ['uplot', 'uPlot.iife.min.js'],
  'uplot.css': ['uplot', 'uPlot.min.css'],
};

function asset(body: Buffer, file: string): ConsoleAsset {
  const type = TYPES[extname(file)];
  if (type === undefined) throw new Error(`console: no content type for ${file}`);
  return { body, gzip: gzipSync(body, { level: 9 }), type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

/** The import map is the page's one inline script; the policy admits exactly it by hash. */
function importMapHashes(html: string): string[] {
  const hashes: string[] = [];
  for (const match of html.matchAll(/<script type="importmap">([\s\S]*?)<\/script>/g)) {
    hashes.push(`'sha256-${createHash('sha256').update(match[1]).digest('base64')}'`);
  }
  return hashes;
}

export function loadConsoleAssets(options: { dir?: string } = {}): ConsoleAssets {
  const dir = options.dir ?? fileURLToPath(new URL('../../../console/', import.meta.url));
  const files = new Map<string, ConsoleAsset>();
  let html = '';
  for (const name of readdirSync(dir).sort()) {
    if (!(extname(name) in TYPES) || name.startsWith('.')) continue;
    const body = readFileSync(join(dir, name));
    if (name === 'index.html') {
      html = body.toString('utf8');
      files.set(CONSOLE_ROOT, asset(body, name));
    } else {
      files.set(`${CONSOLE_ROOT}${name}`, asset(body, name));
    }
  }
  if (html === '') throw new Error(`console: no index.html in ${dir}`);
  const require = createRequire(import.meta.url);
  for (const [name, [pkg, file]] of Object.entries(VENDOR)) {
    const path = join(dirname(require.resolve(pkg)), file);
    files.set(`${CONSOLE_ROOT}vendor/${name}`, asset(readFileSync(path), name));
  }
  const csp = [
    "default-src 'none'",
    `script-src 'self' ${importMapHashes(html).join(' ')}`.trim(),
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { files, csp };
}
