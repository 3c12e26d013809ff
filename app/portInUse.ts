/**
 * A listener whose port another program holds stops the start with a message a person can act on:
 * which listener and port, what holds it where this machine shows it, and the flag and variable
 * that move it — instead of `INTERNAL: listen EADDRINUSE`. A common case: Mosquitto already on 1883
 * on an IoT developer's machine.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { FleetError } from '../engine/kernel/errors.ts';
import { settings, type SettingName } from './loadConfig.ts';

export interface Listener {
  /** What listens, for the message: HTTP, MQTT, … */
  name: string;
  /** The setting that chooses its port. */
  setting: SettingName;
  host: string;
  port: number;
  /** Said after the flag, e.g. how to run without this listener. */
  hint?: string;
}

/** Runs `listen`; EADDRINUSE from it becomes a PORT_IN_USE FleetError that explains itself. */
export async function listening<T>(listener: Listener, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    if ((error as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') throw error;
    const [variable] = settings[listener.setting];
    throw new FleetError('PORT_IN_USE', `${listener.name} port ${listener.port} is in use (wanted on ${listener.host}): held by ${portHolder(listener.port)}. `
      + `Choose another port with --${listener.setting} <port> (environment variable ${variable})${listener.hint ? `, ${listener.hint}` : ''}`, { cause: error });
  }
}

/**
 * Who listens on TCP `port`, as far as this user can see: Linux lists listening sockets in
 * /proc/net/tcp{,6} with their inode, and each process's descriptors in /proc/<pid>/fd (another
 * user's only to root). Elsewhere, or when hidden, it says how to look.
 */
export function portHolder(port: number): string {
  const look = `see \`ss -ltnp 'sport = :${port}'\` or \`lsof -nP -iTCP:${port} -sTCP:LISTEN\``;
  const inodes = new Set<string>();
  let listed = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    listed = true;
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A') continue;
      if (Number.parseInt(fields[1].split(':')[1] ?? '', 16) === port) inodes.add(`socket:[${fields[9]}]`);
    }
  }
  if (!listed) return `a program this system does not name here (${look})`;
  if (inodes.size === 0) return `a socket not listed as listening here (another network namespace or container?) (${look})`;
  const holders: string[] = [];
  for (const pid of safeList('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const fds = safeList(`/proc/${pid}/fd`);
    if (!fds.some((fd) => inodes.has(safeLink(`/proc/${pid}/fd/${fd}`)))) continue;
    holders.push(`${safeRead(`/proc/${pid}/comm`).trim() || 'a process'} (pid ${pid})`);
    if (holders.length === 3) break;
  }
  return holders.length > 0 ? holders.join(', ') : `a process of another user (${look} as root)`;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeLink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
