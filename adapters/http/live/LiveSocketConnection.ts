/**
 * One WebSocket connection of `GET /live` (liveSocket.ts, docs/live.md): `auth` first, then
 * `subscribe` / `unsubscribe` frames handled one at a time, in order (a subscribe's lookups finish
 * before the next frame), and the transport its subscriptions write their events to.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { FleetError, toFleetError } from '../../../engine/kernel/errors.ts';
import type { HubEvent, LiveFilter, LiveOwner } from '../../../engine/live/LiveHub.ts';
import { LiveSubscription, type LiveCloseReason, type LiveFormat, type LiveTransport } from '../../../engine/live/LiveSubscription.ts';
import type { Principal } from '../../../engine/ports/registry.ts';
import { ID_PATTERN } from '../../../schemas/registry.ts';
import { hashToken } from '../../../engine/access/tokens.ts';
import { kindsOf } from './liveRoutes.ts';
import type { Clock } from '../../../engine/kernel/clock.ts';
import type { EdgeAccess } from '../EdgeAccess.ts';
import type { LiveConnections, LiveSource } from './liveRoutes.ts';

export interface LiveSocketOptions {
  hub: LiveSource;
  access: Pick<EdgeAccess, 'authenticate' | 'device' | 'ground'>;
  clock: Clock;
  connections: LiveConnections;
  /** Largest client frame, bytes. Default 4 096. */
  maxPayloadBytes?: number;
  /** Time a new connection has to send `auth`, ms. Default 5 000. */
  authTimeoutMs?: number;
  /** Subscriptions per connection. Default 32. */
  maxSubscriptions?: number;
  /** Malformed or refused frames tolerated before the connection is closed. Default 10. */
  maxErrors?: number;
  /** Send-buffer bytes before a slow client is dropped. Default 1 MiB. */
  maxBufferedBytes?: number;
}

const CLOSE_POLICY = 1008;
/** setTimeout's longest delay (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Client frames received and not handled yet, per connection. */
const MAX_QUEUED_FRAMES = 64;
const CLOSE_TRY_AGAIN = 1013;
const CLOSE_GOING_AWAY = 1001;
const ID = new RegExp(ID_PATTERN);

// Bytes, encoded once per event for every subscriber (`ws` would encode a string for each send).
const RESET = Buffer.from('{"type":"reset"}');
const OVERFLOW = Buffer.from('{"type":"overflow"}');
const WS_FORMAT: LiveFormat<Buffer> = {
  event: (e: HubEvent) => Buffer.from(`{"type":"${e.kind}","id":${JSON.stringify(e.id)},"data":${e.json}}`),
  reset: () => RESET,
  overflow: () => OVERFLOW,
};
/** Text messages (a Buffer would be sent as binary otherwise). */
const TEXT = { binary: false };

const AUTH_FIRST = 'the first frame must be {"type":"auth","token":…}';

interface Held {
  subscription: LiveSubscription<Buffer>;
  unsubscribe(): void;
}

export class LiveSocketConnection {
  readonly #ws: WebSocket;
  readonly #socket: Duplex;
  readonly #release: () => void;
  readonly #o: LiveSocketOptions;
  readonly #subscriptions = new Map<string, Held>();
  readonly #transport: LiveTransport<Buffer>;
  #principal: Principal | undefined;
  /** The token of the auth frame: each subscription checks it again (revoked, expired, a role changed). */
  #token = '';
  #tokenHash = '';
  #errors = 0;
  #closed = false;
  #chain = Promise.resolve();
  #queued = 0;

  constructor(ws: WebSocket, socket: Duplex, release: () => void, options: LiveSocketOptions) {
    this.#ws = ws;
    this.#socket = socket;
    this.#release = release;
    this.#o = options;
    this.#transport = {
      write: (frames) => this.#write(frames),
      buffered: () => ws.bufferedAmount,
      end: (reason) => this.#end(reason),
    };
  }

  listen(): void {
    const ws = this.#ws;
    const authTimer = this.#o.clock.setTimeout(() => {
      if (this.#principal === undefined) this.#refuse('no auth frame in time', 'auth timeout');
    }, this.#o.authTimeoutMs ?? 5_000);
    ws.on('close', () => {
      this.#closed = true;
      authTimer.cancel();
      for (const { subscription, unsubscribe } of this.#subscriptions.values()) { subscription.detach(); unsubscribe(); }
      this.#subscriptions.clear();
      this.#release();
    });
    ws.on('error', () => undefined);
    ws.on('message', (raw, isBinary) => {
      // Frames wait for the lookups of the ones before: a client may not pile them up meanwhile.
      if (++this.#queued > MAX_QUEUED_FRAMES) {
        this.#send({ type: 'error', code: 'RATE_LIMITED', detail: `more than ${MAX_QUEUED_FRAMES} frames waiting` });
        ws.close(CLOSE_POLICY, 'too many frames');
        return;
      }
      this.#chain = this.#chain
        .then(() => this.#handle(raw.toString(), isBinary, authTimer))
        .catch((error: unknown) => this.#fail(error))
        .finally(() => { this.#queued--; });
    });
  }

  #send(frame: object): void {
    if (!this.#closed) this.#ws.send(JSON.stringify(frame));
  }

  #fail(error: unknown): void {
    const fleet = toFleetError(error);
    this.#send({ type: 'error', code: fleet.code, detail: fleet.status >= 500 && fleet.code === 'INTERNAL' ? 'internal error' : fleet.message });
    if (++this.#errors >= (this.#o.maxErrors ?? 10)) this.#ws.close(CLOSE_POLICY, 'too many errors');
  }

  /** An `error` frame with UNAUTHORIZED, then a policy close. */
  #refuse(detail: string, reason: string): void {
    this.#send({ type: 'error', code: 'UNAUTHORIZED', detail });
    this.#ws.close(CLOSE_POLICY, reason);
  }

  /**
   * Each event stays a message of its own (docs/live.md); the socket (the upgrade handler's, ws
   * writes its frames to it) is corked meanwhile so the messages leave in one write, as SSE joins
   * its frames.
   */
  #write(frames: readonly Buffer[]): void {
    if (this.#closed) return;
    this.#socket.cork();
    for (const frame of frames) this.#ws.send(frame, TEXT);
    this.#socket.uncork();
  }

  #end(reason: LiveCloseReason): void {
    const ws = this.#ws;
    if (reason === 'overflow') {
      ws.close(CLOSE_TRY_AGAIN, 'overflow');
      // A client that does not read would never complete the closing handshake.
      const cut = this.#o.clock.setTimeout(() => ws.terminate(), 2_000);
      ws.once('close', () => cut.cancel());
    } else {
      ws.close(reason === 'forbidden' ? CLOSE_POLICY : CLOSE_GOING_AWAY, reason);
    }
  }

  async #handle(text: string, isBinary: boolean, authTimer: { cancel(): void }): Promise<void> {
    if (this.#closed) return;
    const frame = this.#parse(text, isBinary);
    if (frame === undefined) return;
    if (this.#principal === undefined) return this.#authenticate(frame, authTimer);
    if (frame.type === 'subscribe') return this.#subscribe(frame);
    if (frame.type === 'unsubscribe') return this.#unsubscribe(frame);
    if (frame.type === 'auth') throw new FleetError('CONFLICT', 'already authenticated');
    throw new FleetError('BAD_REQUEST', 'type must be auth, subscribe or unsubscribe');
  }

  /** The frame as a JSON object; undefined when the connection was closed for it (nothing before `auth`). */
  #parse(text: string, isBinary: boolean): Record<string, unknown> | undefined {
    try {
      if (isBinary) throw new FleetError('BAD_REQUEST', 'frames are JSON text');
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new FleetError('MALFORMED_JSON', 'a frame is a JSON object');
      return parsed as Record<string, unknown>;
    } catch (error) {
      if (this.#principal === undefined) {
        this.#refuse(AUTH_FIRST, 'auth first');
        return undefined;
      }
      throw error instanceof FleetError ? error : new FleetError('MALFORMED_JSON', 'a frame is a JSON object');
    }
  }

  async #authenticate(frame: Record<string, unknown>, authTimer: { cancel(): void }): Promise<void> {
    if (frame.type !== 'auth' || typeof frame.token !== 'string') return this.#refuse(AUTH_FIRST, 'auth first');
    try {
      this.#principal = (await this.#o.access.authenticate(`Bearer ${frame.token}`)).principal;
      this.#token = frame.token;
      this.#tokenHash = hashToken(frame.token);
    } catch (error) {
      return this.#refuse(toFleetError(error).message, 'unauthorized');
    }
    authTimer.cancel();
    this.#closeAtExpiry(this.#principal.key?.expiresAt);
    this.#send({ type: 'ready' });
  }

  /** A key's connection ends when the key expires (1008), subscribed or not: its token is no token any more. */
  #closeAtExpiry(expiresAt: number | undefined): void {
    if (expiresAt === undefined || this.#closed) return;
    const wait = expiresAt - this.#o.clock.now();
    const timer = this.#o.clock.setTimeout(() => {
      if (this.#o.clock.now() < expiresAt) return this.#closeAtExpiry(expiresAt);
      this.#refuse('the API key expired', 'expired');
    }, Math.min(Math.max(0, wait), MAX_TIMER_MS));
    this.#ws.once('close', () => timer.cancel());
  }

  #unsubscribe(frame: Record<string, unknown>): void {
    const key = keyOf(frame);
    const held = this.#subscriptions.get(key);
    if (held === undefined) throw new FleetError('NOT_FOUND', `no subscription to ${key}`);
    held.subscription.detach();
    held.unsubscribe();
    this.#subscriptions.delete(key);
  }

  async #subscribe(frame: Record<string, unknown>): Promise<void> {
    // The token again, as the registry knows it now: one revoked or expired since the auth frame
    // (on a connection that followed nothing, so nothing closed it) ends the connection.
    let who: Principal;
    try {
      who = (await this.#o.access.authenticate(`Bearer ${this.#token}`)).principal;
    } catch (error) {
      return this.#refuse(toFleetError(error).message, 'unauthorized');
    }
    const key = keyOf(frame);
    const maxSubscriptions = this.#o.maxSubscriptions ?? 32;
    if (this.#subscriptions.has(key)) throw new FleetError('CONFLICT', `already subscribed to ${key}`);
    if (this.#subscriptions.size >= maxSubscriptions) throw new FleetError('RATE_LIMITED', `at most ${maxSubscriptions} subscriptions per connection`);
    if (frame.kinds !== undefined && !Array.isArray(frame.kinds)) throw new FleetError('VALIDATION_FAILED', 'kinds must be an array');
    const kinds = kindsOf(frame.kinds as unknown[] | undefined, 'kinds');
    const lastEventId = frame.lastEventId;
    if (lastEventId !== undefined && typeof lastEventId !== 'string') throw new FleetError('VALIDATION_FAILED', 'lastEventId must be a string');
    let filter: LiveFilter;
    let groundId: string;
    if (typeof frame.device === 'string') {
      const device = await this.#o.access.device(who, frame.device, 'read');
      filter = { deviceId: device.id, kinds };
      groundId = device.groundId;
    } else {
      groundId = (await this.#o.access.ground(who, frame.ground as string)).id;
      filter = { groundId, kinds };
    }
    // An edge nobody listened to takes the topic up again first: what is stored once `subscribed` is sent reaches it.
    await this.#o.hub.readingFromNow?.();
    if (this.#closed) return;
    // A second subscribe frame for the same key may have passed the check above while this one waited.
    if (this.#subscriptions.has(key)) throw new FleetError('CONFLICT', `already subscribed to ${key}`);
    const subscription = new LiveSubscription({ transport: this.#transport, format: WS_FORMAT, maxBufferedBytes: this.#o.maxBufferedBytes });
    this.#send({ type: 'subscribed', [filter.deviceId !== undefined ? 'device' : 'ground']: filter.deviceId ?? filter.groundId });
    const owner: LiveOwner = { subjectId: who.subjectId, tokenHash: this.#tokenHash, groundId };
    if (who.key?.expiresAt !== undefined) owner.expiresAt = who.key.expiresAt;
    const unsubscribe = this.#o.hub.subscribe(filter, subscription, lastEventId, owner);
    this.#subscriptions.set(key, { subscription, unsubscribe });
  }
}

/** `device:<id>` or `ground:<id>` of a subscribe/unsubscribe frame; ids shaped as registry ids. */
function keyOf(frame: Record<string, unknown>): string {
  const device = frame.device;
  const ground = frame.ground;
  if ((device === undefined) === (ground === undefined)) throw new FleetError('VALIDATION_FAILED', 'name exactly one of device and ground');
  const id = device ?? ground;
  if (typeof id !== 'string' || !ID.test(id)) throw new FleetError('BAD_REQUEST', 'device and ground are registry ids');
  return `${device !== undefined ? 'device' : 'ground'}:${id}`;
}
