/**
 * A webhook receiver for bench/integrations.bench.ts, in a process of its own so that its work is
 * not the service's: it counts the events it is sent and how long each took from its uplink's
 * receipt (`receivedAt`) to here, and answers 204, or 503 while told to fail.
 *
 *   node bench/support/countingReceiver.ts <host>
 *
 * stdout: `listening <port>` once, then `count <events> <requests>` every 100 ms.
 * stdin, one command per line: `fail` (503 from now on), `ok` (204 from now on), `latency` (prints
 * `latency <p50 ms> <p99 ms> <events>` of the events received since the last `latency`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

const host = process.argv[2] ?? '127.0.0.2';
let failing = false;
let events = 0;
let requests = 0;
let latencies: number[] = [];

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    requests++;
    if (failing) {
      res.writeHead(503).end();
      return;
    }
    const now = Date.now();
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events: { receivedAt?: string }[] };
    events += body.events.length;
    for (const event of body.events) if (event.receivedAt !== undefined) latencies.push(now - Date.parse(event.receivedAt));
    res.writeHead(204).end();
  });
});

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = line.trim();
  if (command === 'fail') failing = true;
  else if (command === 'ok') failing = false;
  else if (command === 'latency') {
    const sorted = latencies.sort((a, b) => a - b);
    process.stdout.write(`latency ${percentile(sorted, 50)} ${percentile(sorted, 99)} ${sorted.length}\n`);
    latencies = [];
  }
}).on('close', () => process.exit(0));

server.listen(0, host, () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  setInterval(() => process.stdout.write(`count ${events} ${requests}\n`), 100).unref();
});
