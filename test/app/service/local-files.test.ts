/**
 * The service's files are its user's alone, whatever the umask it was started under: the data dir
 * 0700, the admin socket 0600 (it creates users and tokens for whoever connects), and every file
 * and directory under the data dir without group or other bits — log segments hold the raw uplink
 * bodies. A data dir that other users can write is refused at start. (Started under umask 000, the
 * socket was 0777 and another local user created a user and got a token through it; the data dir was
 * 0755 and the segments readable by anyone.)
 *
 * The other user is a real one (`nobody`), so the kernel's own permission checks decide: that needs
 * root to switch user, and these tests are skipped, saying so, without it.
 */
import * as assert from 'uvu/assert';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readdirSync, type Dirent } from 'node:fs';
import { dirname, join } from 'node:path';
import { suite, unless } from '../../support/suite.ts';
import { freePort } from '../../support/fleetCluster.ts';
import { startUntilExit } from '../../support/startUntilExit.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const env = { ...process.env, DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATA_DIR: '', METRICS_PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' };

/** uid and gid of `nobody`, or undefined on a machine without it. */
function nobody(): { uid: number; gid: number } | undefined {
  try {
    return { uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })) };
  } catch {
    return undefined;
  }
}
const other = nobody();
const whyNot = process.getuid?.() !== 0 ? 'not running as root: switching to another Unix user (nobody) needs root'
  : other === undefined ? 'no user `nobody` on this machine' : undefined;

interface Started { child: ChildProcess; port: number; output: () => string }

/** `fleetstream start` under `umask`, through a shell (the umask is inherited, as from a login shell). */
async function startUnderUmask(umask: string, dataDir: string): Promise<Started> {
  const port = await freePort();
  const child = spawn('/bin/sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', process.execPath, bin, 'start', '--data-dir', dataDir, '--port', String(port), '--host', '127.0.0.1', '--mqtt-port=-1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  await waitFor(() => output.includes('fleetstream started') || child.exitCode !== null, 60_000, 'service start');
  assert.ok(output.includes('fleetstream started'), output);
  return { child, port, output: () => output };
}

function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => started.child.once('exit', () => resolve()));
  started.child.kill('SIGTERM');
  return exited;
}

/** `fleetstream admin …` as this (root) user; its JSON answer. */
function admin(dataDir: string, ...args: string[]): Record<string, string> {
  return JSON.parse(execFileSync(process.execPath, [bin, 'admin', ...args, '--json', '--data-dir', dataDir], { env, encoding: 'utf8' })) as Record<string, string>;
}

/** A device's state through the HTTP edge: its raw body goes to a log segment. */
async function sendState(dataDir: string, port: number): Promise<void> {
  const created = admin(dataDir, 'quickstart');
  const res = await fetch(`http://127.0.0.1:${port}/device/${created.deviceId}/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${created.deviceToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ temperature: { value: 21.5 } }),
  });
  assert.is(res.status, 202, await res.text());
}

/** Every path under `dir` (itself included), depth first; symbolic links (their own mode means nothing) and entries the running service removed meanwhile (chDB's temporary parts) left out. */
function walk(dir: string): string[] {
  const out = [dir];
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path));
    else if (!entry.isSymbolicLink()) out.push(path);
  }
  return out;
}

const segmentsUnder = (dataDir: string) => walk(join(dataDir, 'log')).filter((path) => path.endsWith('.seg'));

/**
 * What the other user gets: a `create-user` over the admin socket, and reading a segment. Run as a
 * child process with its uid and gid, from `/` (it may not enter our temporary directories).
 */
function asOtherUser(socket: string, segment: string): { admin: string; segment: string } {
  const script = `
    const http = require('node:http');
    const fs = require('node:fs');
    const [socket, segment] = process.argv.slice(1);
    let read;
    try { read = 'read ' + fs.readFileSync(segment).length + ' bytes'; } catch (e) { read = e.code; }
    const body = JSON.stringify({ name: 'intruder' });
    const req = http.request({ socketPath: socket, path: '/admin/create-user', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => console.log(JSON.stringify({ admin: res.statusCode + ' ' + text, segment: read })));
    });
    req.on('error', (e) => console.log(JSON.stringify({ admin: e.code, segment: read })));
    req.end(body);`;
  const out = execFileSync(process.execPath, ['-e', script, socket, segment], { uid: other!.uid, gid: other!.gid, cwd: '/', env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
  return JSON.parse(out) as { admin: string; segment: string };
}

const modeOf = (path: string) => (lstatSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** The mode bits of `path`, or undefined once it is gone. */
function bitsOf(path: string): number | undefined {
  try {
    return lstatSync(path).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Files and directories under `dataDir` (itself included) that another user may read, write or
 * enter: group or other bits on the entry, and every directory above it, from the data dir on,
 * enterable by group or others. A file 0644 inside a 0700 directory is closed to them.
 */
function openToOthers(dataDir: string): string[] {
  const open: string[] = [];
  const reachable = new Set<string>([dirname(dataDir)]);
  for (const path of walk(dataDir)) {
    const bits = bitsOf(path);
    if (bits === undefined || !reachable.has(dirname(path))) continue;
    if ((bits & 0o011) !== 0) reachable.add(path);
    if ((bits & 0o077) !== 0) open.push(`${path} ${modeOf(path)}`);
  }
  return open;
}

/** Entries directly in `dataDir` with group or other bits (what the service created there takes none). */
const childrenOpen = (dataDir: string) => readdirSync(dataDir).map((name) => join(dataDir, name))
  .filter((path) => !lstatSync(path).isSymbolicLink() && (lstatSync(path).mode & 0o077) !== 0).map((path) => `${path} ${modeOf(path)}`);

/**
 * Sends a state (so a log segment exists), then checks as another user that neither the admin
 * socket nor a segment opens; returns both paths for the callers' mode checks.
 */
async function closedToOthers(dataDir: string, port: number): Promise<{ socket: string; segments: string[] }> {
  await sendState(dataDir, port);
  const socket = join(dataDir, 'admin.sock');
  const segments = segmentsUnder(dataDir);
  assert.ok(segments.length > 0, 'a log segment was written');
  const tried = asOtherUser(socket, segments[0]);
  assert.is(tried.admin, 'EACCES', `another user on admin.sock: ${tried.admin}`);
  assert.is(tried.segment, 'EACCES', `another user reading ${segments[0]}: ${tried.segment}`);
  return { socket, segments };
}

unless('local files against another Unix user', whyNot, () => {
  const test = suite('local files (another user)');
  const tmp = tempDir('local-files');
  // Our temporary directory open to others, so that only the data dir's own modes stand in their way.
  chmodSync(tmp.dir, 0o755);
  let running: Started | undefined;
  test.after.each(async () => {
    if (running !== undefined) await stop(running);
    running = undefined;
  });
  test.after(() => tmp.remove());

  test('started under umask 000: the data dir is 0700, admin.sock 0600, nothing under it open to others; another user can neither use the socket nor read a segment', async () => {
    const dataDir = join(tmp.dir, 'fresh', 'data');
    running = await startUnderUmask('000', dataDir);
    const { socket, segments } = await closedToOthers(dataDir, running.port);

    assert.is(modeOf(dataDir), '0700');
    assert.ok(lstatSync(socket).isSocket());
    assert.is(modeOf(socket), '0600');
    for (const segment of segments) assert.is(modeOf(segment), '0600', segment);
    assert.equal(childrenOpen(dataDir), []);
    assert.equal(openToOthers(dataDir), []);
  });

  test('an existing 0755 data dir is accepted (others cannot write it), and what the service creates in it is still its own: others can enter it, not use the socket nor read a segment', async () => {
    const dataDir = join(tmp.dir, 'existing');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    running = await startUnderUmask('000', dataDir);
    const { socket, segments } = await closedToOthers(dataDir, running.port);

    assert.is(modeOf(dataDir), '0755', 'the operator\'s mode is left as it was');
    assert.is(modeOf(socket), '0600');
    for (const segment of segments) assert.is(modeOf(segment), '0600', segment);
    assert.equal(childrenOpen(dataDir), []);
    assert.equal(openToOthers(dataDir), [`${dataDir} 0755`], 'only the data dir itself');
    assert.match(running.output(), /data dir .* is readable by other users/);
  });

  test.run();
});

const refusal = suite('local files (refusal)');
const tmp = tempDir('local-files-refusal');
refusal.after(() => tmp.remove());

refusal('a data dir other users can write (world- or group-writable) is refused: exit code 2, the dir, its mode and the fix named, no stack trace, nothing created in it', async () => {
  for (const mode of [0o777, 0o770]) {
    const dataDir = join(tmp.dir, `open-${mode.toString(8)}`);
    mkdirSync(dataDir);
    chmodSync(dataDir, mode);
    const port = await freePort();
    const { code, output: stderr } = await startUntilExit({ args: ['--data-dir', dataDir, '--port', String(port), '--host', '127.0.0.1', '--mqtt-port=-1'], env, timeoutMs: 20_000 });
    assert.is(code, 2, stderr);
    assert.ok(stderr.includes(`data dir ${dataDir} is writable by other users (mode 0${mode.toString(8)})`), stderr);
    assert.ok(stderr.includes(`chmod go-w ${dataDir}`), stderr);
    assert.not.match(stderr, /\n\s+at /, 'no stack trace');
    assert.equal(readdirSync(dataDir), [], 'nothing created in it');
  }
});

refusal.run();
