/**
 * The one place a FleetError becomes an HTTP answer: status from engine/kernel/errors.ts ErrorCodes, an
 * RFC 9457 application/problem+json body with the stable `code`, and the headers the status calls
 * for (WWW-Authenticate on 401, Retry-After on 429/503).
 */
import { STATUS_CODES } from 'node:http';
import { isFleetError, toFleetError, type FleetError } from '../../engine/kernel/errors.ts';
import type { Problem } from '../../schemas/edge.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Extra fields a FleetError's `detail` may carry for the edge. */
export interface ProblemDetail {
  /** Field-level errors (422). */
  errors?: { path: string; message: string }[];
  /** Seconds the client should wait (429, 503). */
  retryAfter?: number;
  /** Close the connection after answering (a body left unread). */
  closeConnection?: boolean;
  /** A refused uplink's id, under which its rejections are recorded. */
  uplinkId?: string;
  /** 403: the role in the ground the request needs (engine/access/groundRoles.ts). */
  requiredRole?: string;
  /** 406: the formats or media types the resource has. */
  allowed?: string[];
}

export function problemType(code: string): string {
  return `urn:fleetstream:problem:${code.toLowerCase().replace(/_/g, '-')}`;
}

export function toProblem(error: FleetError, instance?: string): Problem {
  const problem: Problem = {
    type: problemType(error.code),
    title: STATUS_CODES[error.status] ?? 'Error',
    status: error.status,
    code: error.code,
    detail: error.message,
  };
  if (instance !== undefined) problem.instance = instance;
  const errors = (error.detail as ProblemDetail | undefined)?.errors;
  if (Array.isArray(errors) && errors.length > 0) problem.errors = errors;
  const uplinkId = (error.detail as ProblemDetail | undefined)?.uplinkId;
  if (typeof uplinkId === 'string') problem.uplinkId = uplinkId;
  const requiredRole = (error.detail as ProblemDetail | undefined)?.requiredRole;
  if (typeof requiredRole === 'string') problem.requiredRole = requiredRole;
  const allowed = (error.detail as ProblemDetail | undefined)?.allowed;
  if (Array.isArray(allowed)) problem.allowed = allowed;
  return problem;
}

/**
 * Anything thrown → problem response. Errors that are not FleetErrors are internal: their message
 * is not shown to the client (it may hold SQL or paths); `onInternal` gets the original.
 */
export function problemResponse(error: unknown, instance?: string, onInternal?: (error: unknown) => void): Response {
  let fleet: FleetError;
  if (isFleetError(error)) {
    fleet = error;
    if (fleet.status >= 500 && !fleet.retriable) onInternal?.(error);
  } else {
    onInternal?.(error);
    fleet = toFleetError(new Error('internal error'));
  }
  const detail = (fleet.detail ?? {}) as ProblemDetail;
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store' };
  if (fleet.status === 401) headers['www-authenticate'] = 'Bearer realm="fleetstream"';
  if (fleet.status === 429 || fleet.status === 503) {
    const seconds = typeof detail.retryAfter === 'number' && detail.retryAfter > 0 ? Math.ceil(detail.retryAfter) : 1;
    headers['retry-after'] = String(seconds);
  }
  if (detail.closeConnection === true) headers.connection = 'close';
  return new Response(JSON.stringify(toProblem(fleet, instance)), { status: fleet.status, headers });
}
