/**
 * A Mosquitto of a test's own, for settings the machine's broker (127.0.0.1:1883, defaults) does
 * not have: an ACL, small queue limits. Started on a free loopback port with its own config file in
 * a temp dir, stopped (and the dir removed) by `stop()`. Needs the `mosquitto` binary on PATH
 * (`mosquittoMissing()` says why not, for `unless`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, writeFileSync } from 'node:fs';
import { freePort } from './freePort.ts';
import { tempDir } from './tmp.ts';

export function mosquittoMissing(): string | undefined {
  const probe = spawnSync('mosquitto', ['-h'], { encoding: 'utf8' });
  return probe.error === undefined ? undefined : 'no mosquitto binary on PATH (apt-get install mosquitto)';
}

export interface MosquittoOptions {
  /** Extra mosquitto.conf lines (e.g. `max_queued_messages 10`). */
  settings?: string[];
  /** Initial ACL file lines; with none, no ACL (everything allowed). */
  acl?: string[];
}

export class MosquittoProcess {
  readonly port: number;
  readonly url: string;
  readonly #child: ChildProcess;
  readonly #tmp: ReturnType<typeof tempDir>;
  readonly #aclFile: string;
  #output = '';
  #waiters: { text: string; from: number; resolve(): void }[] = [];

  private constructor(port: number, child: ChildProcess, tmp: ReturnType<typeof tempDir>, aclFile: string) {
    this.port = port;
    this.url = `mqtt://127.0.0.1:${port}`;
    this.#child = child;
    this.#tmp = tmp;
    this.#aclFile = aclFile;
    const take = (chunk: Buffer) => {
      this.#output += chunk.toString('utf8');
      this.#waiters = this.#waiters.filter((w) => {
        if (this.#output.indexOf(w.text, w.from) < 0) return true;
        w.resolve();
        return false;
      });
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
  }

  static async start(options: MosquittoOptions = {}): Promise<MosquittoProcess> {
    const tmp = tempDir('mosquitto');
    // Started as root, Mosquitto drops to its own user, which must read the files.
    chmodSync(tmp.dir, 0o755);
    const port = await freePort();
    const aclFile = `${tmp.dir}/acl`;
    const lines = [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'log_dest stderr', 'log_type error', 'log_type warning', 'log_type notice', 'log_type information', ...(options.settings ?? [])];
    if (options.acl !== undefined) {
      writeFileSync(aclFile, `${options.acl.join('\n')}\n`, { mode: 0o644 });
      lines.push(`acl_file ${aclFile}`);
    }
    writeFileSync(`${tmp.dir}/mosquitto.conf`, `${lines.join('\n')}\n`);
    const child = spawn('mosquitto', ['-c', `${tmp.dir}/mosquitto.conf`], { stdio: ['ignore', 'pipe', 'pipe'] });
    const m = new MosquittoProcess(port, child, tmp, aclFile);
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`mosquitto exited (${code}): ${m.#output.slice(-500)}`))));
    try {
      await Promise.race([m.#waitFor(`listen socket on port ${port}`, 5000), exited]);
    } catch (error) {
      // A broker that did not come up is not left running.
      await m.stop();
      throw error;
    }
    return m;
  }

  /** Adds ACL lines and has Mosquitto read the file again (SIGHUP), resolving once it did. */
  async allow(lines: string[]): Promise<void> {
    appendFileSync(this.#aclFile, `${lines.join('\n')}\n`);
    const from = this.#output.length;
    const reloaded = this.#waitFor('Reloading config.', 5000, from);
    this.#child.kill('SIGHUP');
    await reloaded;
    // The line is written as the reload begins; the ACL is read right after, in the same step.
    await new Promise((r) => setTimeout(r, 50));
  }

  /** Freezes the broker (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void {
    this.#child.kill('SIGSTOP');
  }

  resume(): void {
    this.#child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null) {
      const exited = new Promise((resolve) => this.#child.once('exit', resolve));
      this.#child.kill('SIGCONT');
      this.#child.kill('SIGTERM');
      await exited;
    }
    this.#tmp.remove();
  }

  #waitFor(text: string, timeoutMs: number, from = 0): Promise<void> {
    if (this.#output.indexOf(text, from) >= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mosquitto did not log "${text}" within ${timeoutMs} ms: ${this.#output.slice(-500)}`)), timeoutMs);
      this.#waiters.push({ text, from, resolve: () => { clearTimeout(timer); resolve(); } });
    });
  }
}
