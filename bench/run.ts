/**
 * Runs every bench/*.bench.ts in turn (or the ones named on the command line), each in its own
 * process with this Node, printing its output as it comes, then a summary of exit codes and times.
 * Benchmarks run one at a time on purpose: they measure a shared 2-core machine.
 *
 *   npm run bench
 *   npx node bench/run.ts pipeline actors        only bench/pipeline.bench.ts and bench/actors.bench.ts
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('.', import.meta.url).pathname;
const all = readdirSync(dir).filter((name) => name.endsWith('.bench.ts')).sort();
const wanted = process.argv.slice(2).map((arg) => arg.replace(/^bench\//, '').replace(/(\.bench)?\.ts$/, ''));
const unknown = wanted.filter((name) => !all.includes(`${name}.bench.ts`));
if (unknown.length > 0) {
  console.error(`no such bench: ${unknown.join(', ')} (have: ${all.map((f) => f.replace('.bench.ts', '')).join(', ')})`);
  process.exit(2);
}
const files = wanted.length > 0 ? all.filter((name) => wanted.includes(name.replace('.bench.ts', ''))) : all;

function run(file: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(dir, file)], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', (error) => {
      console.error(`${file}: ${error.message}`);
      resolve(null);
    });
    child.on('close', (code) => resolve(code));
  });
}

const results: Array<{ file: string; code: number | null; ms: number }> = [];
for (const file of files) {
  console.log(`\n=== bench/${file} ===`);
  const started = performance.now();
  const code = await run(file);
  results.push({ file, code, ms: performance.now() - started });
}

console.log('\n=== summary ===');
for (const r of results) console.log(`${r.code === 0 ? 'ok  ' : 'FAIL'} bench/${r.file.padEnd(28)} ${(r.ms / 1000).toFixed(1).padStart(7)} s${r.code === 0 ? '' : `  (exit ${r.code})`}`);
const failed = results.filter((r) => r.code !== 0).length;
console.log(`${results.length - failed} benchmarks ran, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
