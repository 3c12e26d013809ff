/**
 * LPWAN webhooks (DESIGN.md §2 "LNS ──webhook──► lpwan adapter"):
 *   POST /lpwan/thethingsnetwork/uplink   The Things Stack webhook, JSON format, "Uplink message" path
 *   POST /lpwan/loriot/uplink             LORIOT HTTP push application output
 * Authenticated by the application's webhook secret in `Authorization` (`Bearer <secret>`, or the
 * bare secret for outputs that send the header value as typed), not by a Fleetstream token.
 *
 * Answers, chosen so the network server never retries or counts against the webhook what can never
 * succeed, and retries only what may succeed later:
 *   202 accepted   durable in the log; the device actor decodes and stores it
 *   202 dropped    unknown devEui, a devEui of another application, an unreadable payload field:
 *                  recorded as a dead letter (and in a known device's rejections), `code` says why
 *   202 ignored    not an uplink (another message type, LORIOT `gw`/`txd`, port 0)
 *   400            not JSON, or not a message of that network server (a retry cannot help)
 *   401            missing or wrong secret;  403  a The Things Stack message of another application
 *   413            body over the edge's limit;  503 + Retry-After  log or registry unavailable
 */
import type { Context } from 'hono';
import { FleetError } from '../../../../engine/kernel/errors.ts';
import type { LpwanUplinkIntake } from '../../../../engine/lpwan/LpwanUplinkIntake.ts';
import type { LpwanApplications, LpwanNetworkId } from '../../../../engine/ports/lpwanApplications.ts';
import { LoriotUplinkMessage, LpwanUplinkAnswer, TtsUplinkMessage } from '../../../../schemas/lpwan.ts';
import type { TSchema } from 'typebox';
import { parseLoriotUplink } from '../../../lpwan/parseLoriotUplink.ts';
import { parseTtsUplink } from '../../../lpwan/parseTtsUplink.ts';
import type { ParsedWebhook } from '../../../lpwan/parseWebhook.ts';
import type { EdgeContext } from '../../EdgeContext.ts';
import { incomingOf, parseJson, readBody } from '../../request/readBody.ts';

const JSON_TYPE = 'application/json';

export interface LpwanEdgeDeps {
  applications: Pick<LpwanApplications, 'authenticate'>;
  intake: Pick<LpwanUplinkIntake, 'accept'>;
}

/** The secret of an `Authorization` header: `Bearer <secret>` or the bare value. */
function secretOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  const bearer = /^bearer\s+(\S+)$/i.exec(value);
  const secret = bearer ? bearer[1] : value;
  return secret.length > 0 && !/\s/.test(secret) ? secret : undefined;
}

interface Webhook {
  networkId: LpwanNetworkId;
  title: string;
  operationId: string;
  body: TSchema;
  parse(doc: unknown): ParsedWebhook;
}

const WEBHOOKS: Webhook[] = [
  { networkId: 'thethingsnetwork', title: 'The Things Stack', operationId: 'ttsUplink', body: TtsUplinkMessage, parse: parseTtsUplink },
  { networkId: 'loriot', title: 'LORIOT', operationId: 'loriotUplink', body: LoriotUplinkMessage, parse: parseLoriotUplink },
];

export function lpwanRoutes(edge: EdgeContext, deps: LpwanEdgeDeps): void {
  for (const webhook of WEBHOOKS) {
    edge.router.publicRoute({
      methods: ['post'],
      path: `/lpwan/${webhook.networkId}/uplink`,
      operationId: webhook.operationId,
      summary: `${webhook.title} uplink webhook`,
      description: 'Authorization: `Bearer <webhook secret>` of the application (not a Fleetstream token). '
        + 'Every message that can never be stored is answered 202 with status `dropped` or `ignored`, so the network server does not retry it.',
      tags: ['lpwan'],
      body: { required: true, content: { [JSON_TYPE]: webhook.body } },
      responses: { 202: { description: 'accepted (durable in the log), dropped (dead letter, with code) or ignored', content: { [JSON_TYPE]: LpwanUplinkAnswer } } },
      errors: [400, 401, 403, 413, 503],
    }, (c) => receive(c, edge, deps, webhook));
  }
}

async function receive(c: Context, edge: EdgeContext, deps: LpwanEdgeDeps, webhook: Webhook): Promise<Response> {
  const secret = secretOf(c.req.header('authorization'));
  const app = secret === undefined ? undefined : await deps.applications.authenticate(webhook.networkId, secret);
  if (app === undefined) {
    throw new FleetError('UNAUTHORIZED', `${webhook.title} webhook: missing or unknown webhook secret (Authorization: Bearer <secret>)`);
  }
  const parsed = webhook.parse(parseJson(await readBody(c.req.raw, edge.maxBodyBytes, incomingOf(c))));
  c.header('cache-control', 'no-store');
  if (parsed.kind === 'ignored') return c.json({ status: 'ignored', reason: parsed.reason }, 202);
  if (parsed.applicationId !== undefined && parsed.applicationId !== app.applicationId) {
    // A misconfigured webhook: refuse visibly instead of storing under the wrong application.
    throw new FleetError('FORBIDDEN', `the secret is application ${app.applicationId}'s; the message comes from ${parsed.applicationId.slice(0, 64)}`);
  }
  return c.json(await deps.intake.accept(app, parsed.uplink), 202);
}
