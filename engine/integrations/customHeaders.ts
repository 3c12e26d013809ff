/**
 * The headers an integration adds to its requests (an API key of the receiver, a routing tag).
 * They may not stand in for the headers the service sets itself: the signature's three
 * (`webhook-*`: a forged id or timestamp would let a receiver be fooled about what it verified) and
 * those that frame the request (content-type, host, length and hop-by-hop headers).
 */
import { FleetError } from '../kernel/errors.ts';
import { isPlainObject } from '../kernel/isPlainObject.ts';

export const MAX_CUSTOM_HEADERS = 20;
export const MAX_HEADER_NAME = 64;
export const MAX_HEADER_VALUE = 1024;

/** RFC 9110 §5.6.2 token. */
const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible ASCII, spaces and tabs inside: no CR, LF or NUL (header injection), nothing a client would re-encode. */
const VALUE_RE = /^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$/;

const RESERVED = new Set([
  'content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'host', 'connection', 'keep-alive', 'te',
  'trailer', 'upgrade', 'expect', 'proxy-authorization', 'proxy-connection', 'user-agent',
]);

function invalid(message: string, field: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { field } });
}

/** The headers with lower-case names; VALIDATION_FAILED naming the first offending one. */
export function checkCustomHeaders(headers: unknown): Record<string, string> {
  if (!isPlainObject(headers)) throw invalid('an object of header names to string values', 'headers');
  const entries = Object.entries(headers);
  if (entries.length > MAX_CUSTOM_HEADERS) throw invalid(`at most ${MAX_CUSTOM_HEADERS} headers`, 'headers');
  // A Map, not an object: a header named `__proto__` must stay a header.
  const out = new Map<string, string>();
  for (const [name, value] of entries) {
    const field = `headers.${name.slice(0, MAX_HEADER_NAME)}`;
    if (name.length > MAX_HEADER_NAME || !TOKEN_RE.test(name)) throw invalid(`a header name of at most ${MAX_HEADER_NAME} token characters`, field);
    const lower = name.toLowerCase();
    if (lower.startsWith('webhook-') || RESERVED.has(lower)) throw invalid('set by the service, cannot be overridden', field);
    if (out.has(lower)) throw invalid('given twice (header names ignore case)', field);
    if (typeof value !== 'string' || value.length > MAX_HEADER_VALUE || !VALUE_RE.test(value)) {
      throw invalid(`a value of 1 to ${MAX_HEADER_VALUE} visible ASCII characters`, field);
    }
    out.set(lower, value);
  }
  return Object.fromEntries(out);
}
