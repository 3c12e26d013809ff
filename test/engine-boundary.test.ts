/**
 * The engine depends on ports, never on their implementations (DESIGN.md §2, §8): no file under
 * engine/ may import from adapters/, app/ or bin/, nor a vendor SDK that an adapter wraps. The
 * packages the engine may use are listed here; adding one is a design decision, made in this file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const root = resolve(new URL('..', import.meta.url).pathname);
const ENGINE_PACKAGES = new Set(['typebox', 'typebox/compile', 'xstate', 'cbor-x']);
const FORBIDDEN_DIRS = ['adapters', 'app', 'bin', 'test', 'bench'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of static imports, re-exports and dynamic imports. */
export function specifiers(source: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[\s;])(?:import|export)\s(?:[^'"`;]*?\sfrom\s*)?(['"])([^'"]+)\1|\bimport\(\s*(['"])([^'"]+)\3\s*\)/g;
  for (const m of source.matchAll(re)) out.push(m[2] ?? m[4]);
  return out;
}

/** The violations of one file: imports that leave the engine for an adapter, the app or a vendor SDK. */
export function violations(file: string, source: string): string[] {
  const found: string[] = [];
  for (const spec of specifiers(source)) {
    if (spec.startsWith('.')) {
      const target = relative(root, resolve(dirname(file), spec));
      const top = target.split('/')[0];
      if (FORBIDDEN_DIRS.includes(top)) found.push(`${relative(root, file)} imports ${spec} (${top}/)`);
    } else if (!spec.startsWith('node:') && !ENGINE_PACKAGES.has(spec)) {
      found.push(`${relative(root, file)} imports package ${spec}`);
    }
  }
  return found;
}

test('no file under engine/ imports an adapter, the app or a vendor SDK', () => {
  const files = sources(join(root, 'engine'));
  assert.ok(files.length > 50, `found only ${files.length} engine files`);
  const all = files.flatMap((file) => violations(file, readFileSync(file, 'utf8')));
  assert.equal(all, []);
});

test('the check sees what it guards against', () => {
  const file = join(root, 'engine/uplink/example.ts');
  assert.equal(violations(file, "import { x } from '../../adapters/kafka/index.ts';").length, 1);
  assert.equal(violations(file, "import type { App } from '../../app/createService.ts';").length, 1);
  assert.equal(violations(file, "export { y } from '../../adapters/http/EdgeDeps.ts';").length, 1);
  assert.equal(violations(file, "const m = await import('../../adapters/chdb/createChdbStore.ts');").length, 1);
  assert.equal(violations(file, "import { Kafka } from 'kafkajs';").length, 1);
  assert.equal(violations(file, "import { Hono } from 'hono';").length, 1);
  assert.equal(violations(file, "import { Compile } from 'typebox/compile';\nimport { x } from '../kernel/errors.ts';\nimport { y } from 'node:fs';"), []);
});

test.run();
