/**
 * One delivery attempt: a POST of `{"events":[…]}` to the integration's URL, signed per Standard
 * Webhooks (engine/integrations/webhookSignature.ts), with the integration's own headers, answered
 * as a DeliveryOutcome (engine/integrations/deliveryOutcome.ts) that the retry schedule reads.
 *
 * - Destinations: the OutboundPolicy is applied to the address actually connected to. The
 *   connection resolves the host through this sender's `lookup`, which refuses the whole answer
 *   when one address is refused, so a name re-pointed at a private address after the integration
 *   was created is caught here (an IP literal, which Node connects to without a lookup, is checked
 *   before the request).
 * - Redirects are not followed: a 3xx is an answer like any other non-2xx, retried and shown.
 * - One deadline, `timeoutMs` (10 s), for the whole exchange: connecting, the answer's head and
 *   reading its body. The body is read up to `maxResponseBytes` (64 KiB), then the connection is
 *   dropped; what is kept of it for the integration's last error is shorter (`previewBytes`).
 * - No answer (timeout, refused or reset connection, TLS failure, a destination the policy refuses)
 *   is a retry too; `error` says why, for people — decisions read `outcome` only.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { checkCustomHeaders } from '../../engine/integrations/customHeaders.ts';
import { classifyAnswer, type DeliveryOutcome } from '../../engine/integrations/deliveryOutcome.ts';
import { eventsBody } from '../../engine/integrations/eventsBody.ts';
import type { WebhookAnswer, WebhookRequest, WebhookTransport } from '../../engine/ports/webhooks.ts';
import { signWebhook } from '../../engine/integrations/webhookSignature.ts';
import { bareHost, type OutboundPolicy } from './OutboundPolicy.ts';
import { parseWebhookUrl } from './webhookUrl.ts';

export interface WebhookSenderOptions {
  policy: OutboundPolicy;
  /** Deadline of one attempt, connection to the end of the answer, ms. Default 10 000. */
  timeoutMs?: number;
  /** Bytes of an answer's body read at most. Default 65 536. */
  maxResponseBytes?: number;
  /** Bytes of the body kept in the answer (the integration's last error, the test endpoint). Default 1024. */
  previewBytes?: number;
  /** Stamps webhook-timestamp. Default the system clock. */
  clock?: Clock;
  /** Sent as User-Agent. Default `Fleetstream-Webhooks`. */
  userAgent?: string;
  /** The resolver connections use before the policy checks its answer. Default node:dns lookup (the system's). */
  dnsLookup?: typeof dnsLookup;
}

export type { WebhookAnswer, WebhookRequest } from '../../engine/ports/webhooks.ts';

/** Error code of a connection the policy refused at lookup time. */
const REFUSED_CODE = 'EDESTINATIONREFUSED';

export class WebhookSender implements WebhookTransport {
  readonly #policy: OutboundPolicy;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #previewBytes: number;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #dnsLookup: typeof dnsLookup;
  // Connections are kept alive per destination: each was checked when it connected.
  readonly #http = new HttpAgent({ keepAlive: true, maxSockets: 8 });
  readonly #https = new HttpsAgent({ keepAlive: true, maxSockets: 8 });

  constructor(options: WebhookSenderOptions) {
    this.#policy = options.policy;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxResponseBytes = options.maxResponseBytes ?? 65_536;
    this.#previewBytes = Math.min(options.previewBytes ?? 1024, this.#maxResponseBytes);
    this.#clock = options.clock ?? systemClock;
    this.#userAgent = options.userAgent ?? 'Fleetstream-Webhooks';
    this.#dnsLookup = options.dnsLookup ?? dnsLookup;
  }

  /** One attempt. Never throws for what the receiver or the network does; a malformed request (URL, headers, secrets) throws its FleetError. */
  async send(request: WebhookRequest): Promise<WebhookAnswer> {
    const url = parseWebhookUrl(request.url);
    const custom = checkCustomHeaders(request.headers ?? {});
    const body = Buffer.from(eventsBody(request.events), 'utf8');
    const signed = signWebhook({ id: request.messageId, timestamp: Math.floor(this.#clock.now() / 1000), body }, request.secrets);
    const protocol = url.protocol as 'http:' | 'https:';
    const host = bareHost(url.hostname);
    if (isIP(host) !== 0) {
      const why = this.#policy.refusal(host, host, protocol);
      if (why !== undefined) return noAnswer('refused', `${REFUSED_CODE}: ${why}`);
    }
    const headers = {
      ...custom,
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': this.#userAgent,
      ...signed,
    };
    return this.#exchange(url, protocol, host, headers, body);
  }

  #exchange(url: URL, protocol: 'http:' | 'https:', host: string, headers: Record<string, string>, body: Buffer): Promise<WebhookAnswer> {
    return new Promise((resolve) => {
      const abort = new AbortController();
      let timedOut = false;
      let settled = false;
      const finish = (answer: WebhookAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(answer);
      };
      const deadline = setTimeout(() => {
        timedOut = true;
        abort.abort();
      }, this.#timeoutMs);
      const send = protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(url, {
        method: 'POST',
        headers,
        agent: protocol === 'https:' ? this.#https : this.#http,
        lookup: this.#guardedLookup(host, protocol),
        signal: abort.signal,
      });
      req.on('response', (res) => {
        void this.#readBody(res).then(({ text, error }) => {
          const status = res.statusCode ?? 0;
          if (timedOut) return finish(noAnswer('timeout', `timed out after ${this.#timeoutMs} ms reading the answer`, status, text));
          const retryAfter = res.headers['retry-after'];
          const answer: WebhookAnswer = { outcome: classifyAnswer(status, typeof retryAfter === 'string' ? retryAfter : undefined, this.#clock.now()), status, body: text };
          if (error !== undefined) answer.error = error;
          finish(answer);
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (timedOut) return finish(noAnswer('timeout', `timed out after ${this.#timeoutMs} ms`));
        const code = typeof error.code === 'string' ? error.code : 'ERROR';
        finish(noAnswer(code === REFUSED_CODE ? 'refused' : 'connection', `${code}: ${error.message}`));
      });
      req.end(body);
    });
  }

  /** Reads the body up to maxResponseBytes (then drops the connection); keeps previewBytes of it as text. */
  #readBody(res: IncomingMessage): Promise<{ text: string; error?: string }> {
    return new Promise((resolve) => {
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let read = 0;
      const done = (error?: string) => {
        res.removeAllListeners('data');
        const text = Buffer.concat(kept).toString('utf8').replace(/\uFFFD+$/, '');
        resolve(error === undefined ? { text } : { text, error });
      };
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (keptBytes < this.#previewBytes) {
          const part = chunk.subarray(0, this.#previewBytes - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        if (read > this.#maxResponseBytes) {
          res.destroy();
          done();
        }
      });
      res.once('end', () => done());
      res.once('error', (error: NodeJS.ErrnoException) => done(`${error.code ?? 'ERROR'}: the answer's body was cut off`));
      res.once('close', () => done());
    });
  }

  /** The lookup of every connection: the system resolver, then the policy on every address it gave. */
  #guardedLookup(host: string, protocol: 'http:' | 'https:'): LookupFunction {
    return (hostname, options, callback) => {
      this.#dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, '', 0);
        for (const { address } of addresses) {
          const why = this.#policy.refusal(address, host, protocol);
          if (why !== undefined) return callback(Object.assign(new Error(`${hostname} resolves to ${address}: ${why}`), { code: REFUSED_CODE }), '', 0);
        }
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        callback(null, addresses[0].address, addresses[0].family);
      });
    };
  }

  /** Ends kept-alive connections. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}

function noAnswer(reason: 'timeout' | 'connection' | 'refused', error: string, status?: number, body = ''): WebhookAnswer {
  return { outcome: { kind: 'retry', reason }, ...(status === undefined ? {} : { status }), body, error };
}
