/**
 * The check of a fixed bearer token (the metrics token, schemas/config.ts `metrics.token`): whether
 * an `Authorization` header is `Bearer <token>`. The SHA-256 digests of the presented and the
 * expected token are compared with timingSafeEqual, so the answer's timing shows neither where a
 * guess first differs nor the token's length; a missing or malformed header is digested too. The
 * presented token is compared byte for byte as sent: Node hands header values over as latin1, one
 * character per byte, so a guess in UTF-8 is not a match for a different string.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** RFC 7235: the scheme is case-insensitive; one token68 after it. */
const BEARER = /^Bearer +(\S+) *$/i;

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

export function bearerTokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(Buffer.from(token, 'utf8'));
  return (authorization) => {
    const presented = authorization === undefined ? null : BEARER.exec(authorization);
    const same = timingSafeEqual(digest(Buffer.from(presented?.[1] ?? '', 'latin1')), expected);
    return same && presented !== null;
  };
}
