/** `fleetstream start` as a child process that is expected to stop by itself (a refused start). */
import { spawn } from 'node:child_process';

const bin = new URL('../../bin/fleetstream.ts', import.meta.url).pathname;

export interface StartUntilExitOptions {
  /** Arguments after `start`. */
  args: string[];
  env: NodeJS.ProcessEnv;
  /** How long it may run before it is killed and `code` is 'running'. */
  timeoutMs: number;
}

/** Runs `node bin/fleetstream.ts start …args`: its exit code (or 'running'), and everything it wrote to stdout and stderr. */
export async function startUntilExit(options: StartUntilExitOptions): Promise<{ code: number | null | 'running'; output: string }> {
  const child = spawn(process.execPath, [bin, 'start', ...options.args], { env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const code = await Promise.race([exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), options.timeoutMs))]);
  if (code === 'running') {
    child.kill('SIGKILL');
    await exited;
  }
  return { code, output };
}
