/**
 * Registers routes on a Hono app from a description (TypeBox schemas for path, query, body and
 * responses) and keeps the descriptions, so the OpenAPI document is built from the very schemas
 * that validate requests. Every authenticated route runs, in order: bearer authentication (401),
 * the per-token rate limit (429), path parameters (400: a malformed id never reaches SQL), query
 * parameters (422), then the handler. Anything thrown becomes a problem+json answer.
 */
import type { Context, Hono } from 'hono';
import type { Static, TSchema } from 'typebox';
import type { AuditSink } from '../../engine/audit/AuditRecorder.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError, toFleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import { withAuditNote, type AuditNote } from './auditNote.ts';
import type { Authenticated, EdgeAccess } from './EdgeAccess.ts';
import { problemResponse } from './problemResponse.ts';
import type { TokenBuckets } from './TokenBuckets.ts';
import { check, coerceQuery } from './request/check.ts';

/** A malformed path parameter is a 400 (a malformed id never reaches SQL), not a 422. */
const PATH_CHECK = { code: 'BAD_REQUEST' } as const;

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  /** Media type → schema. */
  content?: Record<string, TSchema>;
  headers?: Record<string, { description: string; schema: TSchema }>;
}

export interface RouteSpec<P extends TSchema = TSchema, Q extends TSchema = TSchema> {
  methods: HttpMethod[];
  /** OpenAPI form: `/device/{id}/state`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  params?: P;
  query?: Q;
  /** Optional request headers the route reads (documented only; the handler checks them). */
  headers?: TSchema;
  body?: { required: boolean; content: Record<string, TSchema> };
  responses: Record<number, ResponseSpec>;
  /** Statuses answered with application/problem+json besides the common ones. */
  errors?: number[];
  /** false: a write the audit log leaves out (states sent: data, not a change of the ground). */
  audit?: false;
}

export interface RouteInput<P, Q> {
  params: P;
  query: Q;
}

export interface AuthedInput<P, Q> extends RouteInput<P, Q>, Authenticated {}

export interface RegisteredRoute {
  spec: RouteSpec;
  authenticated: boolean;
}

export interface EdgeRouterOptions {
  app: Hono;
  access: EdgeAccess;
  /** Per-token limit; absent: none. */
  limiter?: TokenBuckets;
  onInternal?(error: unknown, context: { method: string; path: string }): void;
  /**
   * Where changes are recorded (docs/grounds.md "Audit log"): every POST, PUT, PATCH and DELETE of
   * an authenticated route by a user or a key that reached a ground it is a member of, allowed or
   * refused. Absent: nothing is recorded.
   */
  audit?: { sink: AuditSink; clock: Clock };
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The operation's id in /openapi.json and in the audit log: a route's later methods are suffixed (`putDeviceCommand_post`). */
export function operationIdOf(spec: Pick<RouteSpec, 'operationId' | 'methods'>, method: HttpMethod): string {
  return method === spec.methods[0] ? spec.operationId : `${spec.operationId}_${method}`;
}

export class EdgeRouter {
  readonly routes: RegisteredRoute[] = [];
  readonly #options: EdgeRouterOptions;

  constructor(options: EdgeRouterOptions) {
    this.#options = options;
  }

  /** A route that needs a bearer token. */
  route<P extends TSchema = TSchema, Q extends TSchema = TSchema>(
    spec: RouteSpec<P, Q>,
    handler: (c: Context, input: AuthedInput<Static<P>, Static<Q>>) => Promise<Response>,
  ): void {
    const run = async (c: Context): Promise<Response> => {
      const auth = await this.#options.access.authenticate(c.req.header('authorization'));
      const wait = this.#options.limiter?.take(auth.token) ?? 0;
      if (wait > 0) {
        throw new FleetError('RATE_LIMITED', 'too many requests for this token', { detail: { retryAfter: wait } });
      }
      const input = this.#input(c, spec as RouteSpec);
      return handler(c, { ...auth, params: input.params as Static<P>, query: input.query as Static<Q> });
    };
    const audit = this.#options.audit;
    if (audit === undefined || spec.audit === false || !spec.methods.some((m) => m !== 'get')) {
      this.#register(spec as RouteSpec, true, run);
      return;
    }
    this.#register(spec as RouteSpec, true, async (c) => {
      if (!CHANGES.has(c.req.method)) return run(c);
      const note: AuditNote = {};
      const operation = operationIdOf(spec, c.req.method.toLowerCase() as HttpMethod);
      try {
        const response = await withAuditNote(note, () => run(c));
        record(audit, note, operation, response.status);
        return response;
      } catch (error) {
        // The status and code problemResponse answers with (both from the one error table).
        const e = toFleetError(error);
        record(audit, note, operation, e.status, e.code);
        throw error;
      }
    });
  }

  /** A route open to anyone (health, the OpenAPI document). */
  publicRoute(spec: RouteSpec, handler: (c: Context) => Promise<Response> | Response): void {
    this.#register(spec, false, async (c) => handler(c));
  }

  #input(c: Context, spec: RouteSpec): RouteInput<unknown, unknown> {
    const params = spec.params ? check(spec.params, c.req.param(), 'path', PATH_CHECK) : {};
    const query = spec.query ? check(spec.query, coerceQuery(spec.query, c.req.queries()), 'query') : {};
    return { params, query };
  }

  #register(spec: RouteSpec, authenticated: boolean, run: (c: Context) => Promise<Response>): void {
    this.routes.push({ spec, authenticated });
    const honoPath = spec.path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
    const methods = spec.methods.map((m) => m.toUpperCase());
    this.#options.app.on(methods, honoPath, async (c) => {
      try {
        return await run(c);
      } catch (error) {
        return problemResponse(error, c.req.path, (e) => this.#options.onInternal?.(e, { method: c.req.method, path: c.req.path }));
      }
    });
  }
}

/**
 * The note of a change that reached a ground, as its audit entry; nothing for one that did not (401,
 * a stranger, a malformed id) nor for a 404: an id that names nothing changes nothing, and a forged
 * one is no event of the ground's.
 */
function record(audit: NonNullable<EdgeRouterOptions['audit']>, note: AuditNote, operation: string, status: number, code?: string): void {
  if (note.actor === undefined || note.groundId === undefined || status === 404) return;
  audit.sink.record({
    groundId: note.groundId,
    at: audit.clock.now(),
    actor: note.actor,
    operation,
    ...(note.targetId !== undefined && isId(note.targetId) ? { targetId: note.targetId } : {}),
    result: code === undefined ? { status } : { status, code },
  });
}
