/**
 * Start and idle of the embedded service as a newcomer runs it (`fleetstream start`, every adapter
 * on its embedded default: local log, PGlite registry, chDB, MQTT gateway): time from spawn to
 * `/ready` answering 200, peak RSS while starting, and RSS once idle, on a fresh data dir and again
 * on the same dir (a restart). The baseline, measured in the same run, is a bare Node process
 * running an empty HTTP server: every figure is also shown against it. Not part of the test suite.
 *
 *   npx node bench/start.bench.ts [idleSeconds=15] [rounds=2]
 *
 * RSS is read from /proc/<pid>/status (VmRSS; VmHWM for the peak), so this runs on Linux. Should a new
 * registry need initdb, that runs in a child process of the service: the peak "with children" is the highest
 * sum of the service's and its children's RSS, sampled every 50 ms until ready. The service runs
 * with the Node flags of package.json's start script, as `npm start` runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFlags } from '../test/support/startFlags.ts';

const root = new URL('..', import.meta.url).pathname;
const idleSeconds = Number(process.argv[2] ?? 15);
const rounds = Number(process.argv[3] ?? 2);
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * VmRSS and VmHWM of a process, MB, and the part of RSS that is the process's own memory (RssAnon)
 * rather than pages of files it maps (RssFile: mostly the code of Node and of chDB's library, shared
 * and reclaimable by the kernel).
 */
function memoryOf(pid: number): { rss: number; peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

/** RSS of a process and every process below it, MB (initdb of a new registry runs in a child process). */
function treeRssOf(pid: number): number {
  let total = 0;
  try {
    total = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) total += treeRssOf(Number(child));
  } catch { /* gone meanwhile */ }
  return total;
}

async function readyAfter(child: ChildProcess, url: string, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode} before ${url} answered`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - started;
    } catch { /* not listening yet */ }
    await delay(50);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

interface Figures {
  readyMs: number;
  peakMb: number;
  /** Highest sum of the RSS of the process and its children, sampled every 50 ms until ready. */
  treePeakMb: number;
  idleMb: number;
  anonMb: number;
  fileMb: number;
}

async function measure(args: string[], env: NodeJS.ProcessEnv, readyPath: string): Promise<Figures> {
  const port = await freePort();
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env, HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port), PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000); });
  try {
    let treePeakMb = 0;
    const sampler = setInterval(() => { treePeakMb = Math.max(treePeakMb, treeRssOf(child.pid!)); }, 50);
    const readyMs = await readyAfter(child, `http://127.0.0.1:${port}${readyPath}`).finally(() => clearInterval(sampler));
    await delay(idleSeconds * 1000);
    const { rss, peak, anon, file } = memoryOf(child.pid!);
    return { readyMs, peakMb: peak, treePeakMb: Math.max(treePeakMb, peak), idleMb: rss, anonMb: anon, fileMb: file };
  } catch (error) {
    throw new Error(`${String(error)}\n${stderr}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise<void>((resolve) => { if (child.exitCode !== null) resolve(); else child.once('exit', () => resolve()); });
  }
}

const BASELINE = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;

const rows: string[] = [];
const show = (name: string, f: Figures, base: Figures) => rows.push(
  `${name.padEnd(34)} ready ${(f.readyMs / 1000).toFixed(1).padStart(5)} s   peak ${f.peakMb.toFixed(0).padStart(5)} MB (with children ${f.treePeakMb.toFixed(0).padStart(5)})   idle ${f.idleMb.toFixed(0).padStart(5)} MB` +
  ` (own ${f.anonMb.toFixed(0)} + mapped files ${f.fileMb.toFixed(0)})` +
  `   (idle ${(f.idleMb / base.idleMb).toFixed(1)}× the bare Node server's ${base.idleMb.toFixed(0)} MB)`);

for (let round = 1; round <= rounds; round++) {
  const base = await measure(['-e', BASELINE], {}, '/');
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-start-bench-'));
  try {
    const env = { DATA_DIR: dir, MQTT_PORT: String(await freePort()), METRICS_PORT: '0', LOG_FORMAT: 'json' };
    const fresh = await measure([...startFlags, join(root, 'bin/fleetstream.ts'), 'start'], env, '/ready');
    const again = await measure([...startFlags, join(root, 'bin/fleetstream.ts'), 'start'], { ...env, MQTT_PORT: String(await freePort()) }, '/ready');
    show(`round ${round}: fresh data dir`, fresh, base);
    show(`round ${round}: restart on the same dir`, again, base);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
console.log(`embedded service start and idle (${idleSeconds} s after /ready)`);
for (const row of rows) console.log(row);
