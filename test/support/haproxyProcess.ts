/**
 * HAProxy running deploy/haproxy/haproxy.cfg — the compose stack's file, unchanged — in front of two
 * edges on loopback: the file's addresses are environment variables (API_BIND, EDGE_A_API, …), set
 * here to free ports and the edges' ports. Needs the `haproxy` binary on PATH (`haproxyMissing()`
 * says why not, for `unless`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { freePort } from './fleetCluster.ts';
import { waitFor } from './tmp.ts';

export const HAPROXY_CONFIG = new URL('../../deploy/haproxy/haproxy.cfg', import.meta.url).pathname;

export function haproxyMissing(): string | undefined {
  const probe = spawnSync('haproxy', ['-v'], { encoding: 'utf8' });
  return probe.error === undefined ? undefined : 'no haproxy binary on PATH (apt-get install haproxy; .ci/run installs it)';
}

/** One edge as HAProxy reaches it: its HTTP and MQTT `host:port`. */
export interface HaproxyEdge {
  api: string;
  mqtt: string;
}

/** A server's line of HAProxy's CSV statistics (`show stat`). */
export interface ServerStat {
  /** UP, DOWN, MAINT, `UP 1/2` (going down), `DOWN 1/2` (coming up), … */
  status: string;
  /** Connections open now. */
  current: number;
  /** Connections since start. */
  total: number;
}

export class HaproxyProcess {
  /** http://127.0.0.1:<API_BIND port> */
  readonly apiUrl: string;
  /** mqtt://127.0.0.1:<MQTT_BIND port> */
  readonly mqttUrl: string;
  readonly mqttPort: number;
  readonly statsUrl: string;
  readonly #child: ReturnType<typeof spawn>;
  readonly #exited: Promise<void>;
  #output = '';

  private constructor(ports: { api: number; mqtt: number; stats: number }, child: ReturnType<typeof spawn>) {
    this.apiUrl = `http://127.0.0.1:${ports.api}`;
    this.mqttUrl = `mqtt://127.0.0.1:${ports.mqtt}`;
    this.mqttPort = ports.mqtt;
    this.statsUrl = `http://127.0.0.1:${ports.stats}`;
    this.#child = child;
    child.stdout!.on('data', (d: Buffer) => { this.#output += d.toString('utf8'); });
    child.stderr!.on('data', (d: Buffer) => { this.#output += d.toString('utf8'); });
    this.#exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', (error) => { this.#output += String(error); resolve(); });
    });
  }

  /** Starts HAProxy on free loopback ports and waits until its checks find both edges up. */
  static async start(edges: readonly [HaproxyEdge, HaproxyEdge]): Promise<HaproxyProcess> {
    const ports = { api: await freePort(), mqtt: await freePort(), stats: await freePort() };
    const child = spawn('haproxy', ['-db', '-f', HAPROXY_CONFIG], {
      env: {
        ...process.env,
        API_BIND: `127.0.0.1:${ports.api}`, MQTT_BIND: `127.0.0.1:${ports.mqtt}`, STATS_BIND: `127.0.0.1:${ports.stats}`,
        EDGE_A_API: edges[0].api, EDGE_A_MQTT: edges[0].mqtt, EDGE_B_API: edges[1].api, EDGE_B_MQTT: edges[1].mqtt,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const h = new HaproxyProcess(ports, child);
    let gone = false;
    void h.#exited.then(() => { gone = true; });
    try {
      await waitFor(async () => {
        if (gone) throw new Error(`haproxy exited:\n${h.#output.slice(-2000)}`);
        const stats = await h.stats().catch(() => undefined);
        return stats !== undefined && ['edge-a', 'edge-b'].every((s) => stats.get(`edges_api/${s}`)?.status === 'UP' && stats.get(`edges_mqtt/${s}`)?.status === 'UP');
      }, 20_000, 'haproxy up with both edges UP');
    } catch (error) {
      await h.stop();
      throw new Error(`${String(error)}\n${h.#output.slice(-2000)}`);
    }
    return h;
  }

  /** Every server's statistics, keyed `backend/server`. */
  async stats(): Promise<Map<string, ServerStat>> {
    const res = await fetch(`${this.statsUrl}/stats;csv`);
    const [header, ...rows] = (await res.text()).split('\n').filter((l) => l.length > 0);
    const columns = header.replace(/^# /, '').split(',');
    const at = (name: string) => columns.indexOf(name);
    const stats = new Map<string, ServerStat>();
    for (const row of rows) {
      const cells = row.split(',');
      stats.set(`${cells[at('pxname')]}/${cells[at('svname')]}`, { status: cells[at('status')], current: Number(cells[at('scur')]), total: Number(cells[at('stot')]) });
    }
    return stats;
  }

  /** What HAProxy logged (its log goes to stdout: one line per connection and request). */
  output(): string {
    return this.#output;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGTERM');
    await this.#exited;
  }
}
