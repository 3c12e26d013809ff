/**
 * The load generator of bench/mqtt.bench.ts: MQTT clients connected in batches, publishing a
 * scenario's messages while arrivals are polled, and the CPU each side spent per message.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { readdirSync, readFileSync } from 'node:fs';

export interface Outcome { rate: number; received: number; total: number; p50?: number; p99?: number }

/** CPU µs used so far by the whole process, by this (the load generator's) thread, and by Mosquitto's process (when readable). */
export function cpuNow(mosquittoPid: number | undefined): { process: number; main: number; mosquitto: number } {
  const all = process.cpuUsage();
  const main = process.threadCpuUsage();
  let mosquitto = Number.NaN;
  if (mosquittoPid !== undefined) {
    try {
      // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 per second).
      const fields = readFileSync(`/proc/${mosquittoPid}/stat`, 'utf8').split(') ')[1].split(' ');
      mosquitto = (Number(fields[11]) + Number(fields[12])) * 10_000;
    } catch { /* gone */ }
  }
  return { process: all.user + all.system, main: main.user + main.system, mosquitto };
}

/** CPU µs per message between two readings: the broker's, the load generator's thread, the process's other threads. */
export function cpuLine(broker: number, before: ReturnType<typeof cpuNow>, after: ReturnType<typeof cpuNow>, messages: number, edgeThread?: number): string {
  const main = after.main - before.main;
  const others = after.process - before.process - main - (edgeThread ?? 0);
  const per = (micros: number) => (micros / messages).toFixed(1).padStart(5);
  return `CPU µs per message: broker ${per(broker)}, load generator ${per(main)}, other threads ${per(others)}`;
}

export const percentile = (sorted: number[], q: number) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]);

export async function connectAll(url: string, count: number, auth: (i: number) => string | undefined, protocolVersion: 4 | 5 = 4): Promise<MqttClient[]> {
  const clients: MqttClient[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, k) => {
      const token = auth(i + k);
      return mqtt.connectAsync(url, { username: token, password: token, reconnectPeriod: 0, connectTimeout: 20_000, keepalive: 120, protocolVersion }, false);
    }));
    clients.push(...batch);
  }
  return clients;
}

/**
 * Publishes `total` messages over `clients`; `done()` tells how many arrived (receipts or appends);
 * at QoS 1 with `ackLatency` the PUBACK time is the per-message latency.
 */
export async function drive(clients: MqttClient[], topicOf: (i: number) => string, total: number, qos: 0 | 1, limitMs: number,
  arrived: () => number | Promise<number>, latencies: number[], ackLatency: boolean): Promise<Outcome> {
  const perClient = Math.ceil(total / clients.length);
  const started = performance.now();
  const deadline = started + limitMs;
  let sent = 0;
  const publishers = clients.map(async (client, i) => {
    const topic = topicOf(i);
    for (let k = 0; k < perClient && sent < total && performance.now() < deadline; k++) {
      sent++;
      const t = performance.now();
      const payload = Buffer.from(`{"value":${t}}`);
      if (qos === 0) client.publish(topic, payload, { qos: 0 });
      else {
        await client.publishAsync(topic, payload, { qos: 1 });
        if (ackLatency) latencies.push(performance.now() - t);
      }
    }
  });
  // Arrivals are polled every 5 ms while publishing and after; the clock stops at the last one.
  let count = 0;
  let last = started;
  let publishing = true;
  const poll = async () => {
    const now = await arrived();
    if (now !== count) {
      count = now;
      last = performance.now();
    }
  };
  const polling = (async () => {
    while (publishing) {
      await poll();
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await Promise.all(publishers);
  publishing = false;
  await polling;
  await poll();
  while (count < sent && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
    await poll();
  }
  const seconds = (last - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: count / seconds, received: count, total: sent, p50: latencies.length ? percentile(latencies, 0.5) : undefined, p99: latencies.length ? percentile(latencies, 0.99) : undefined };
}

/** Mosquitto's pid when this machine runs one whose /proc entry is readable. */
export function mosquittoProcess(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'mosquitto') return Number(entry);
    } catch { /* gone, or not ours to read */ }
  }
  return undefined;
}
