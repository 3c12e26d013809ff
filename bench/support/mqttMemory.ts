/**
 * The memory figure of bench/mqtt.bench.ts: RSS growth of a broker while raw MQTT 3.1.1
 * connections, held by a child process, CONNECT and SUBSCRIBE; and a Mosquitto of its own to
 * measure against.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { Device } from './mqttEngineThread.ts';

/** A Mosquitto of its own for the memory figure: the system one holds memory from earlier clients. */
export const FRESH_MOSQUITTO_PORT = 18839;

export function vmRss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) * 1024;
}

/**
 * Growth of `rss()` while `count` raw MQTT 3.1.1 connections (held by a child process) CONNECT
 * and SUBSCRIBE to a command topic: its peak until all are answered, and what is held once they are
 * (after `collect()`, which for the edge collects both threads' garbage first, as before the start).
 */
export async function rssOf(port: number, count: number, device: (i: number) => Device | undefined, rss: () => number,
  settle: () => Promise<void> = async () => undefined): Promise<{ peak: number; held: number }> {
  await settle();
  await steady(rss);
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rss()); }, 20);
  const script = `
    const net = require('node:net');
    const [port, count, devices] = JSON.parse(process.argv[1]);
    const str = (s) => { const b = Buffer.from(s); return Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]); };
    const packet = (first, body) => { const len = []; let n = body.length; do { let x = n % 128; n = Math.floor(n / 128); if (n) x |= 128; len.push(x); } while (n); return Buffer.concat([Buffer.from([first, ...len]), body]); };
    let ready = 0;
    const sockets = [];
    const one = (i) => new Promise((resolve) => {
      const d = devices.length ? devices[i % devices.length] : undefined;
      const s = net.connect(port, '127.0.0.1');
      sockets.push(s);
      let got = 0;
      s.on('data', (b) => { got += b.length; if (got >= 9) { ready++; resolve(); } });
      s.on('error', () => resolve());
      s.on('close', () => resolve());
      s.on('connect', () => {
        const flags = d ? 0x82 : 0x02;
        const connect = Buffer.concat([str('MQTT'), Buffer.from([4, flags, 0, 0]), str('rss-' + i), ...(d ? [str(d.token)] : [])]);
        const topic = 'device/' + (d ? d.id : 'x' + i) + '/asset/+/command';
        s.write(Buffer.concat([packet(0x10, connect), packet(0x82, Buffer.concat([Buffer.from([0, 1]), str(topic), Buffer.from([1])]))]));
      });
    });
    (async () => {
      for (let i = 0; i < count; i += 250) await Promise.all(Array.from({ length: Math.min(250, count - i) }, (_, k) => one(i + k)));
      process.stdout.write(JSON.stringify({ ready }) + '\\n');
      process.stdin.on('data', () => process.exit(0));
    })();`;
  const devices = Array.from({ length: Math.min(count, 1000) }, (_, i) => device(i)).filter((d) => d !== undefined);
  const child = spawn(process.execPath, ['-e', script, JSON.stringify([port, count, devices])], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(out); });
  });
  await new Promise((r) => setTimeout(r, 500));
  clearInterval(sampler);
  peak = Math.max(peak, rss());
  await settle();
  await new Promise((r) => setTimeout(r, 500));
  const held = rss() - before;
  const { ready } = JSON.parse(line) as { ready: number };
  child.stdin.write('x');
  await new Promise((r) => child.once('exit', r));
  if (ready < count) console.log(`  (${ready}/${count} connections answered)`);
  return { peak: peak - before, held };
}

/**
 * Waits until `rss()` holds still (within 1 MB over a second; 30 s at most): a process that has just
 * started may still be giving back memory its start used (V8's compilers, the registry's WebAssembly),
 * which once made the edge's growth read as -416 MB per 10 000 connections.
 */
async function steady(rss: () => number): Promise<void> {
  let last = rss();
  let still = 0;
  for (let waited = 0; still < 4 && waited < 30_000; waited += 250) {
    await new Promise((r) => setTimeout(r, 250));
    const now = rss();
    still = Math.abs(now - last) < 1024 * 1024 ? still + 1 : 0;
    last = now;
  }
}

/** A Mosquitto started for the memory figure on FRESH_MOSQUITTO_PORT, or undefined when it cannot start. */
export async function freshMosquitto(): Promise<{ pid: number; stop(): void } | undefined> {
  const listening = () => new Promise<boolean>((resolve) => {
    const socket = connect(FRESH_MOSQUITTO_PORT, '127.0.0.1', () => { socket.destroy(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
  // Something else on the port (a broker left by an interrupted run) would be measured in its place.
  if (await listening()) return undefined;
  const broker = spawn('mosquitto', ['-p', String(FRESH_MOSQUITTO_PORT)], { stdio: 'ignore' });
  broker.on('error', () => undefined);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if (broker.exitCode !== null || broker.pid === undefined) return undefined;
    if (await listening()) return { pid: broker.pid, stop: () => broker.kill() };
  }
  broker.kill();
  return undefined;
}
