/**
 * Runs every `*.test.ts` under test/ (or the files named on the command line) in its own process
 * and ends with the plain line `N passed, N failed, N skipped`. A file that exits non-zero without a
 * uvu summary counts as one failure. Tests that need a server this machine lacks count as skipped
 * (test/support/suite.ts), so a missing variable shows in the last line instead of vanishing.
 * A file whose first line is a shebang naming node flags (`#!/usr/bin/env -S node --liftoff-only`)
 * runs with those flags, as it would run as an executable.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SKIP_MARK } from './support/suite.ts';

const root = new URL('..', import.meta.url).pathname;

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

interface FileResult {
  file: string;
  passed: number;
  failed: number;
  skipped: number;
  code: number | null;
  output: string;
  ms: number;
}

/** The `--flags` after `node` on a shebang first line of `file`, else none. */
function shebangFlags(file: string): string[] {
  const first = readFileSync(file, 'utf8').split('\n', 1)[0];
  if (!first.startsWith('#!')) return [];
  const words = first.slice(2).trim().split(/\s+/);
  const node = words.indexOf('node');
  return node < 0 ? [] : words.slice(node + 1).filter((w) => w.startsWith('--'));
}

function runFile(file: string): Promise<FileResult> {
  const started = Date.now();
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [...shebangFlags(file), file], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const timeout = setTimeout(() => child.kill('SIGKILL'), Number(process.env.TEST_FILE_TIMEOUT_MS ?? 600_000));
    child.on('close', (code) => {
      clearTimeout(timeout);
      const total = /Total:\s+(\d+)/.exec(output);
      const passed = /Passed:\s+(\d+)/.exec(output);
      const skipped = /Skipped:\s+(\d+)/.exec(output);
      let p = passed ? Number(passed[1]) : 0;
      let f = total && passed ? Number(total[1]) - Number(passed[1]) : 0;
      if (code !== 0 && f === 0) f = 1;
      if (!total && code === 0) p = p || 0;
      resolvePromise({ file, passed: p, failed: f, skipped: skipped ? Number(skipped[1]) : 0, code, output, ms: Date.now() - started });
    });
  });
}

const args = process.argv.slice(2);
const files = args.length > 0 ? args.map((a) => join(root, a)) : findTests(join(root, 'test'));
const concurrency = Math.max(1, Number(process.env.TEST_CONCURRENCY ?? 2));
const results: FileResult[] = [];
let next = 0;

async function worker(): Promise<void> {
  while (next < files.length) {
    const file = files[next++];
    const result = await runFile(file);
    results.push(result);
    const name = relative(root, file);
    const status = result.failed > 0 ? 'FAIL' : 'ok  ';
    console.log(`${status} ${name}  (${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped, ${result.ms} ms)`);
    if (result.failed > 0 || process.env.TEST_VERBOSE) console.log(result.output.replace(/^/gm, '    | '));
    else for (const line of result.output.split('\n')) if (line.startsWith(SKIP_MARK)) console.log(`    ${line}`);
  }
}

await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
const skipped = results.reduce((n, r) => n + r.skipped, 0);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 || results.length === 0 ? 1 : 0;
