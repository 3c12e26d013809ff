/**
 * A local stand-in for The Things Stack's webhook downlink queue endpoint on loopback:
 * `POST /api/v3/as/applications/{app}/webhooks/{webhook}/devices/{device}/down/push`. It checks the
 * request as The Things Stack does where a client can get it wrong (API key, JSON body, f_port
 * 1–223, base64 frm_payload, priority name) and answers like it (200 `{}`, errors as
 * `{code, message}`), or with scripted answers (429, 503, …) to exercise retries.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface PushedDownlink {
  applicationId: string;
  webhookId: string;
  deviceId: string;
  fPort: number;
  /** frm_payload decoded. */
  bytes: number[];
  frmPayload: string;
  priority: string;
  correlationIds: string[];
}

export interface ScriptedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const PATH = /^\/api\/v3\/as\/applications\/([a-z0-9-]+)\/webhooks\/([a-z0-9-]+)\/devices\/([a-z0-9-]+)\/down\/push$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const PRIORITIES = new Set(['LOWEST', 'LOW', 'BELOW_NORMAL', 'NORMAL', 'ABOVE_NORMAL', 'HIGH', 'HIGHEST']);

export class FakeTts {
  readonly apiKey: string;
  /** Downlinks queued (answered 200), in order. */
  readonly queued: PushedDownlink[] = [];
  /** Every request that reached the server, with the status it got. */
  readonly requests: { path: string; status: number }[] = [];
  /** Answers used, first to last, before the default checks run. */
  readonly script: ScriptedAnswer[] = [];
  base = '';
  #server: Server;

  private constructor(apiKey: string) {
    this.apiKey = apiKey;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch(() => this.#answer(req, res, 500, { code: 13, message: 'internal' }));
    });
  }

  static async start(apiKey: string): Promise<FakeTts> {
    const tts = new FakeTts(apiKey);
    await new Promise<void>((resolve) => tts.#server.listen(0, '127.0.0.1', resolve));
    const address = tts.#server.address() as { port: number };
    tts.base = `http://127.0.0.1:${address.port}`;
    return tts;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    this.requests.push({ path: req.url ?? '', status });
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const scripted = this.script.shift();
    if (scripted !== undefined) return this.#answer(req, res, scripted.status, scripted.body ?? { code: 14, message: 'scripted' }, scripted.headers);
    const path = PATH.exec(req.url ?? '');
    if (req.method !== 'POST' || path === null) return this.#answer(req, res, 404, { code: 5, message: 'not found' });
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return this.#answer(req, res, 401, { code: 16, message: 'error:pkg/auth:token_invalid (invalid token)' });
    if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) return this.#answer(req, res, 415, { code: 3, message: 'content-type' });
    let doc: any;
    try {
      doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return this.#answer(req, res, 400, { code: 3, message: 'error:pkg/jsonpb:unmarshal (unmarshal failed)' });
    }
    const downlinks = doc?.downlinks;
    if (!Array.isArray(downlinks) || downlinks.length === 0) return this.#answer(req, res, 400, { code: 3, message: 'error:pkg/ttnpb:field_value (downlinks required)' });
    const pushed: PushedDownlink[] = [];
    for (const d of downlinks) {
      if (!Number.isInteger(d.f_port) || d.f_port < 1 || d.f_port > 223) return this.#answer(req, res, 400, { code: 3, message: 'error:pkg/ttnpb:field_value (invalid value of field `f_port`)' });
      if (typeof d.frm_payload !== 'string' || !BASE64.test(d.frm_payload)) return this.#answer(req, res, 400, { code: 3, message: 'error:pkg/jsonpb:unmarshal (frm_payload)' });
      if (d.priority !== undefined && !PRIORITIES.has(d.priority)) return this.#answer(req, res, 400, { code: 3, message: 'error:pkg/ttnpb:field_value (priority)' });
      pushed.push({
        applicationId: path[1], webhookId: path[2], deviceId: path[3], fPort: d.f_port,
        bytes: [...Buffer.from(d.frm_payload, 'base64')], frmPayload: d.frm_payload, priority: d.priority ?? 'NORMAL',
        correlationIds: Array.isArray(d.correlation_ids) ? d.correlation_ids : [],
      });
    }
    this.queued.push(...pushed);
    this.#answer(req, res, 200, {});
  }
}
