/**
 * Live streams over Server-Sent Events (docs/live.md): `GET /device/{id}/live` and
 * `GET /ground/{groundId}/live`, authorised as the REST reads of the same device or ground (401,
 * 403, 404 as problem+json before the stream starts). The stream is written straight to Node's
 * response, whose send buffer is the subscriber's bounded queue (engine/live/LiveSubscription.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import Type from 'typebox';
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { LiveFilter, HubEvent, LiveOwner } from '../../../engine/live/LiveHub.ts';
import type { Principal } from '../../../engine/ports/registry.ts';
import { hashToken } from '../../../engine/access/tokens.ts';
import { LiveSubscription, type LiveFormat, type LiveSubscriber } from '../../../engine/live/LiveSubscription.ts';
import { LIVE_KINDS, type LiveKind } from '../../../schemas/live.ts';
import { DeviceParams, GroundParams } from '../../../schemas/edge.ts';
import type { EdgeContext } from '../EdgeContext.ts';

/** What the edge needs of the live hub. */
export interface LiveSource {
  subscribe(filter: LiveFilter, subscriber: LiveSubscriber, lastEventId?: string, owner?: LiveOwner): () => void;
  /** Resolves once the source reads what is published from now on (LiveHub.readingFromNow); absent: it always does. */
  readingFromNow?(): Promise<void>;
}

export interface EdgeLive {
  hub: LiveSource;
  /** Send-buffer bytes per connection before a slow client is dropped. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Interval of `: keep-alive` comments, ms (proxies close idle streams). Default 15 000. */
  keepAliveMs?: number;
  /** Live connections (SSE and WebSocket) this edge holds at most; more get 503. Default 10 000. */
  maxConnections?: number;
  /** The counter shared with the WebSocket endpoint (liveSocket.ts); default: one of maxConnections. */
  connections?: LiveConnections;
}

/** Counts the live connections of an edge (SSE and WebSocket share the budget). */
export class LiveConnections {
  readonly max: number;
  #count = 0;
  constructor(max: number) {
    this.max = max;
  }
  get count(): number {
    return this.#count;
  }
  /** BACKPRESSURE (503) when full. Returns the release function (idempotent). */
  take(): () => void {
    if (this.#count >= this.max) throw new FleetError('BACKPRESSURE', `this edge holds its maximum of ${this.max} live connections`, { detail: { retryAfter: 5 } });
    this.#count++;
    let released = false;
    return () => {
      if (!released) { released = true; this.#count--; }
    };
  }
}

export const LiveQuery = Type.Object({
  kinds: Type.Optional(Type.String({ maxLength: 64, description: 'comma-separated subset of state,rejection,command (default: all)' })),
});

const SSE_TYPE = 'text/event-stream';
/** How long a dropped slow client gets to read its last frames before its connection is destroyed, ms. */
export const OVERFLOW_GRACE_MS = 2_000;

export const SSE_FORMAT: LiveFormat = {
  event: (e: HubEvent) => `id: ${e.id}\nevent: ${e.kind}\ndata: ${e.json}\n\n`,
  reset: () => 'event: reset\ndata: {}\n\n',
  overflow: () => 'event: overflow\ndata: {}\n\n',
};

/** `kinds` of the query or of a WebSocket subscribe: a subset of LIVE_KINDS, VALIDATION_FAILED otherwise. */
export function kindsOf(list: readonly unknown[] | undefined, where: string): Set<LiveKind> {
  if (list === undefined) return new Set(LIVE_KINDS);
  const kinds = new Set<LiveKind>();
  for (const kind of list) {
    if (!LIVE_KINDS.includes(kind as LiveKind)) {
      // Named without String(): a WebSocket frame's entry may be any JSON, {"toString": …} included.
      const named = typeof kind === 'string' ? JSON.stringify(kind.slice(0, 40)) : `of type ${kind === null ? 'null' : Array.isArray(kind) ? 'array' : typeof kind}`;
      throw new FleetError('VALIDATION_FAILED', `${where}: unknown kind ${named} (${LIVE_KINDS.join(', ')})`, {
        detail: { errors: [{ path: where, message: `must list ${LIVE_KINDS.join(', ')}` }] },
      });
    }
    kinds.add(kind as LiveKind);
  }
  if (kinds.size === 0) throw new FleetError('VALIDATION_FAILED', `${where}: empty`, { detail: { errors: [{ path: where, message: 'must not be empty' }] } });
  return kinds;
}

export function liveRoutes(edge: EdgeContext, live: EdgeLive, connections: LiveConnections): void {
  const { router, access, deps } = edge;
  const streamDeps: StreamDeps = { live, connections, clock: deps.clock };
  const responses = {
    200: { description: 'the event stream (docs/live.md): `id`, `event` (state | rejection | command | overflow | reset), `data` (one-line JSON)', content: { [SSE_TYPE]: Type.String() } },
  };
  const headers = Type.Object({
    'Last-Event-ID': Type.Optional(Type.String({ maxLength: 4096, description: 'the `id` of the last event received: the stream continues after it without a gap, or starts with `event: reset`' })),
  });

  router.route({
    methods: ['get'],
    path: '/device/{id}/live',
    operationId: 'streamDevice',
    summary: 'Live states, rejections and command changes of a device (Server-Sent Events)',
    description: 'Device token: its own device; user token: a device of a ground it is a member of. Send `Last-Event-ID` to continue without a gap. Keep-alive comments every 15 s; a client that does not keep up gets `event: overflow` and is disconnected. See docs/live.md.',
    tags: ['live'],
    params: DeviceParams,
    query: LiveQuery,
    headers,
    responses,
    errors: [403, 404, 503],
  }, async (c, { principal, token, params, query }) => {
    const kinds = kindsOf(query.kinds?.split(','), 'query.kinds');
    const device = await access.device(principal, params.id, 'read');
    return stream(c, { deviceId: device.id, kinds }, ownerOf(principal, token, device.groundId), streamDeps);
  });

  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/live',
    operationId: 'streamGround',
    summary: 'Live states, rejections and command changes of every device of a ground (Server-Sent Events)',
    description: 'User token of a member of the ground. `Last-Event-ID` resumes as for a device. See docs/live.md.',
    tags: ['live'],
    params: GroundParams,
    query: LiveQuery,
    headers,
    responses,
    errors: [403, 404, 503],
  }, async (c, { principal, token, params, query }) => {
    const kinds = kindsOf(query.kinds?.split(','), 'query.kinds');
    const ground = await access.ground(principal, params.groundId);
    return stream(c, { groundId: ground.id, kinds }, ownerOf(principal, token, ground.id), streamDeps);
  });
}

/** Who opens a stream: registry changes of its token, user or device end it, and so does its key's expiry. */
function ownerOf(principal: Principal, token: string, groundId: string): LiveOwner {
  const owner: LiveOwner = { subjectId: principal.subjectId, tokenHash: hashToken(token), groundId };
  if (principal.key?.expiresAt !== undefined) owner.expiresAt = principal.key.expiresAt;
  return owner;
}

interface StreamDeps {
  live: EdgeLive;
  connections: LiveConnections;
  clock: Clock;
}

/**
 * Serves one Server-Sent Events stream on the Node response under Hono: the subscription writes to
 * the response, whose send buffer is its bounded queue; keep-alive comments keep proxies from
 * closing an idle stream.
 */
async function stream(c: Context, filter: LiveFilter, owner: LiveOwner, { live, connections, clock }: StreamDeps): Promise<Response> {
  const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
  const res = env?.outgoing;
  if (res === undefined) throw new FleetError('INTERNAL', 'live streams are served by the Node HTTP server only');
  const release = connections.take();
  // An edge nobody listened to takes the topic up again before the stream opens: what is stored
  // once the client sees it open reaches it.
  await live.hub.readingFromNow?.();
  if (res.destroyed) {
    release();
    return RESPONSE_ALREADY_SENT;
  }
  res.writeHead(200, {
    'content-type': `${SSE_TYPE}; charset=utf-8`,
    'cache-control': 'no-store',
    // Reverse proxies (nginx) would buffer the stream otherwise.
    'x-accel-buffering': 'no',
  });
  res.write(': connected\n\n');
  const subscription = new LiveSubscription({
    maxBufferedBytes: live.maxBufferedBytes,
    format: SSE_FORMAT,
    transport: {
      // A text stream: the frames of a turn are one chunk.
      write: (frames) => { res.write(frames.length === 1 ? frames[0] : frames.join('')); },
      buffered: () => res.writableLength,
      end: (reason) => {
        res.end();
        // A client that reads slowly still gets `overflow`; one that does not read at all is cut
        // after a grace, so the bytes it left unread are not kept.
        if (reason === 'overflow') {
          const cut = clock.setTimeout(() => res.destroy(), OVERFLOW_GRACE_MS);
          res.once('close', () => cut.cancel());
        }
      },
    },
  });
  const unsubscribe = live.hub.subscribe(filter, subscription, c.req.header('last-event-id'), owner);
  const keepAlive = repeat(clock, live.keepAliveMs ?? 15_000, () => {
    if (subscription.open && res.writableLength < (live.maxBufferedBytes ?? 1024 * 1024)) res.write(': keep-alive\n\n');
  });
  res.on('close', () => {
    subscription.detach();
    unsubscribe();
    keepAlive.cancel();
    release();
  });
  return RESPONSE_ALREADY_SENT;
}

/** Runs `fn` every `ms` on the clock until cancelled. */
export function repeat(clock: Clock, ms: number, fn: () => void): TimerHandle {
  let timer: TimerHandle | undefined;
  let cancelled = false;
  const arm = () => {
    timer = clock.setTimeout(() => {
      if (cancelled) return;
      fn();
      arm();
    }, ms);
  };
  arm();
  return { cancel: () => { cancelled = true; timer?.cancel(); } };
}
