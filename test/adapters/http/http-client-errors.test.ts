/**
 * What Node's HTTP server refuses before any route runs — malformed framing, a request head over
 * 16 KiB — is answered as problem+json like every other error of the API (adapters/http/
 * serveEdge.ts `clientError`). Raw sockets: no client library would send these.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { Hono } from 'hono';
import { serveEdge, type ServedEdge } from '../../../adapters/http/serveEdge.ts';

let served: ServedEdge;

test.before(async () => {
  const app = new Hono();
  app.get('/health', (c) => c.json({ ok: true }));
  served = await serveEdge(app, { port: 0 });
});
test.after(async () => {
  await served?.close();
});

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function raw(request: string | Buffer): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect(served.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (e) => (chunks.length > 0 ? undefined : reject(e)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
  });
}

function assertProblem(reply: RawReply, status: number, code: string): Record<string, unknown> {
  assert.is(reply.status, status, reply.body);
  assert.is(reply.headers['content-type'], 'application/problem+json');
  assert.is(reply.headers.connection, 'close');
  assert.is(Number(reply.headers['content-length']), Buffer.byteLength(reply.body));
  const problem = JSON.parse(reply.body) as Record<string, unknown>;
  assert.is(problem.status, status);
  assert.is(problem.code, code);
  assert.is(problem.type, `urn:fleetstream:problem:${code.toLowerCase().replace(/_/g, '-')}`);
  return problem;
}

test('a well-formed request still reaches the app', async () => {
  const reply = await raw('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.is(reply.status, 200);
});

test('malformed framing is 400 problem+json (BAD_REQUEST) naming the parser error', async () => {
  const cases = [
    'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx',
    'GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /health HTTP/9.9\r\nHost: x\r\n\r\n',
    'GET /health HTTP/1.1\r\nBad Header\r\n\r\n',
    '\x00\x01\x02\r\n\r\n',
  ];
  for (const request of cases) {
    const problem = assertProblem(await raw(request), 400, 'BAD_REQUEST');
    assert.match(String(problem.detail), /^malformed HTTP request \(HPE_/, JSON.stringify(request));
  }
});

test('a request head over 16 KiB is 431 problem+json (HEADERS_TOO_LARGE)', async () => {
  const big = `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
  const problem = assertProblem(await raw(big), 431, 'HEADERS_TOO_LARGE');
  assert.match(String(problem.detail), /16 KiB/);
  const many = `GET /health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 600 }, (_, i) => `X-H${i}: ${'b'.repeat(30)}`).join('\r\n')}\r\n\r\n`;
  assertProblem(await raw(many), 431, 'HEADERS_TOO_LARGE');
});

test('a bad request after a good one on a keep-alive connection: the good answer, then the problem', async () => {
  const reply = await new Promise<string>((resolve) => {
    const socket = connect(served.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => {
      chunks.push(c);
      // Once the first answer is in, the next request on the same connection is malformed.
      if (chunks.length === 1) socket.write('GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n');
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  });
  assert.match(reply, /^HTTP\/1.1 200 OK/);
  assert.match(reply, /HTTP\/1.1 400 Bad Request\r\ncontent-type: application\/problem\+json/);
});

test.run();
