/**
 * A port nothing listens on now, for a server a test starts next. Taken at random below the
 * kernel's ephemeral range (Linux: 32768 and up), not from listen(0): a port listen(0) gives comes
 * from that range, where every process's outgoing connections take theirs too (the Kafka and
 * PostgreSQL clients of the test files running beside), and one of them could take it between
 * this check and the server's bind.
 */
import { createServer } from 'node:net';

const LOW = 20_000;
const SPAN = 12_000;

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOW + Math.floor(Math.random() * SPAN);
    if (await listens(port)) return port;
  }
  throw new Error(`no free port found between ${LOW} and ${LOW + SPAN}`);
}
