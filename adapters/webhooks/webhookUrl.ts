/**
 * A receiver's URL, checked when an integration is created or changed: its form here, its
 * destination against the OutboundPolicy (checked again at every connection by WebhookSender's
 * lookup, since what a name resolves to can change after this check).
 *
 * Parsed by the WHATWG URL parser, the one Node's HTTP client would use: the IPv4 forms people
 * smuggle loopback in (`http://2130706433/`, `http://0x7f.1/`, `http://017700000001/`) come out
 * as the dotted address they mean, and that is what is checked.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { FleetError } from '../../engine/kernel/errors.ts';
import { bareHost, type OutboundPolicy } from './OutboundPolicy.ts';

export const MAX_URL_LENGTH = 2048;

/** Every address a host name resolves to (the system resolver, as the connection will use). */
export type ResolveHost = (host: string) => Promise<string[]>;

export const systemResolve: ResolveHost = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** DNS answers that mean "no such name" or "not now": the URL is kept, and the delivery fails until it resolves. */
const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ENODATA', 'ESERVFAIL', 'ETIMEOUT', 'ECONNREFUSED']);

function invalid(message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `url: ${message}`, { detail: { field: 'url' } });
}

function refused(message: string): FleetError {
  return new FleetError('DESTINATION_REFUSED', `url: ${message}`, { detail: { field: 'url' } });
}

/** The URL's form: http(s), a host, no credentials, no fragment. VALIDATION_FAILED otherwise. */
export function parseWebhookUrl(text: unknown): URL {
  if (typeof text !== 'string' || text.length === 0) throw invalid('a URL is required');
  if (text.length > MAX_URL_LENGTH) throw invalid(`at most ${MAX_URL_LENGTH} characters`);
  // The parser strips tabs and newlines silently; a URL holding them is not one anybody meant.
  if (/[\u0000-\u0020\u007f]/.test(text)) throw invalid('control characters or spaces');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid('not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('https:// (or http:// to an allowed host)');
  if (url.username !== '' || url.password !== '') throw invalid('credentials in the URL are not accepted; send them in a header');
  if (url.hash !== '') throw invalid('a fragment is never sent; leave it out');
  if (url.hostname === '') throw invalid('a host is required');
  return url;
}

/**
 * The URL, once its form and its destination are allowed: DESTINATION_REFUSED when it names or
 * resolves to an address the policy refuses, or is plain http:// to a host the operator did not
 * allow. A name that does not resolve yet is accepted (its deliveries fail until it does, and every
 * connection is checked anyway).
 */
export async function checkWebhookUrl(text: unknown, policy: OutboundPolicy, resolve: ResolveHost = systemResolve): Promise<URL> {
  const url = parseWebhookUrl(text);
  const protocol = url.protocol as 'http:' | 'https:';
  const host = bareHost(url.hostname);
  if (policy.allowsHost(host)) return url;
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !UNRESOLVED.has(code)) throw error;
      if (protocol === 'http:') throw refused('plain http:// goes only to hosts the operator allows (--integrations-allow-hosts)');
      return url;
    }
  }
  for (const address of addresses) {
    const why = policy.refusal(address, host, protocol);
    if (why !== undefined) throw refused(why);
  }
  return url;
}
