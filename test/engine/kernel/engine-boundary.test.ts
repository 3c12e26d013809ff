/**
 * The engine depends on ports, never on their implementations (DESIGN.md §2, §8): no file under
 * engine/ may import from adapters/, app/ or bin/, nor a vendor SDK that an adapter wraps. The
 * packages the engine may use are listed here; adding one is a design decision, made in this file.
 * Inside the engine, layers hold too (INNER_RULES): the kernel imports nothing else of the engine,
 * ports import only the kernel and other ports (and schemas/), and the uplink path does not reach
 * up into the device actors, the command side or the live feed.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const root = resolve(new URL('../../..', import.meta.url).pathname);
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

/** Per folder of engine/: the only engine folders it may import, or those it must not. */
const INNER_RULES: Record<string, { only?: string[]; not?: string[] }> = {
  kernel: { only: ['kernel'] },
  ports: { only: ['kernel', 'ports'] },
  uplink: { not: ['actors', 'commands', 'live'] },
};

/** The violations of one engine file of the layers inside engine/ (imports of schemas/ are always allowed). */
export function innerViolations(file: string, source: string): string[] {
  const [top, folder] = relative(root, file).split('/');
  const rule = INNER_RULES[folder];
  if (top !== 'engine' || rule === undefined) return [];
  const found: string[] = [];
  for (const spec of specifiers(source)) {
    if (!spec.startsWith('.')) continue;
    const [targetTop, target] = relative(root, resolve(dirname(file), spec)).split('/');
    if (targetTop !== 'engine') continue;
    const refused = rule.only !== undefined ? !rule.only.includes(target) : rule.not!.includes(target);
    if (refused) found.push(`${relative(root, file)} imports ${spec} (engine/${target}/)`);
  }
  return found;
}

test('inside engine/, the kernel, the ports and the uplink path import only the layers below them', () => {
  const all = sources(join(root, 'engine')).flatMap((file) => innerViolations(file, readFileSync(file, 'utf8')));
  assert.equal(all, []);
});

test('the inner check sees what it guards against', () => {
  const kernel = join(root, 'engine/kernel/example.ts');
  assert.equal(innerViolations(kernel, "import type { Log } from '../ports/log.ts';").length, 1, 'the kernel importing a port');
  assert.equal(innerViolations(kernel, "import { ID_PATTERN } from '../../schemas/registry.ts';\nimport { x } from './clock.ts';"), []);
  const port = join(root, 'engine/ports/example.ts');
  assert.equal(innerViolations(port, "import type { UplinkSubmission } from '../uplink/UplinkIngest.ts';").length, 1, 'a port importing an implementation');
  assert.equal(innerViolations(port, "import type { ErrorCode } from '../kernel/errors.ts';\nimport type { DeviceInfo } from './directory.ts';"), []);
  const uplink = join(root, 'engine/uplink/pipeline/example.ts');
  assert.equal(innerViolations(uplink, "import { DeviceActors } from '../../actors/DeviceActors.ts';").length, 1, 'uplink importing actors');
  assert.equal(innerViolations(uplink, "import type { CommandPipeline } from '../../commands/CommandPipeline.ts';").length, 1, 'uplink importing commands');
  assert.equal(innerViolations(uplink, "export { LiveHub } from '../../live/LiveHub.ts';").length, 1, 'uplink importing live');
  assert.equal(innerViolations(uplink, "import { TopicConsumer } from '../../consumer/TopicConsumer.ts';\nimport type { Log } from '../../ports/log.ts';"), []);
});

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
