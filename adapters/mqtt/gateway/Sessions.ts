/**
 * MQTT sessions of the embedded edge, bound to the principal that opened them. A client id belongs
 * to the device (or user) whose session holds it: another principal's CONNECT with it is refused
 * (MQTT 5 CONNACK 0x85, 3.1.1 return code 2) and never sees its subscriptions; the same principal
 * reconnecting takes the session over and the older connection is closed ([MQTT-3.1.4-2]).
 *
 * A session keeps its subscriptions. It ends when its connection closes with a zero expiry (MQTT 5
 * Session Expiry Interval 0, MQTT 3.1.1 clean session), or its expiry passes while disconnected;
 * the client id is then free. Commands waiting for an offline device stay in the command actors
 * (engine/commands), not here. Subscriptions are indexed by the device they are about, so a stored
 * state or a command finds its subscribers without matching topic strings.
 */
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';

/** A subscription the edge granted, resolved to the device it is about. */
export interface SubscriptionEntry {
  filter: string;
  qos: 0 | 1;
  channel: 'command' | 'feed' | 'alarm';
  deviceId: string;
  groundId: string;
  /** device/<id>/asset/<name>/…: the asset name, or '+' for every asset. */
  asset?: string;
  /** asset/<id>/…: the asset, by id and name. */
  assetId?: string;
  assetName?: string;
}

/** What a session needs of the connection holding it. */
export interface SessionHolder {
  /** Closes the connection, sending an MQTT 5 client DISCONNECT with `reason` first. */
  disconnect(reason: number, text: string): void;
}

export interface Session {
  readonly clientId: string;
  readonly owner: string;
  readonly subscriptions: Map<string, SubscriptionEntry>;
  holder: SessionHolder | undefined;
  /** Kept this long after a disconnect, ms; 0: ends with its connection. */
  expiryMs: number;
  timer: TimerHandle | undefined;
  disconnectedAt: number;
  /**
   * Packet ids of QoS 1 publishes refused lately, oldest first (the Map's order), with their answers:
   * a resend (DUP) gets the answer again, not a second record. Created at the first refusal.
   */
  refused: Map<number, Buffer> | undefined;
}

export type Claim =
  | { ok: false }
  | { ok: true; session: Session; present: boolean; previous: SessionHolder | undefined };

export interface SessionsOptions {
  clock: Clock;
  maxSessions: number;
}

export class Sessions {
  readonly #o: SessionsOptions;
  readonly #byClientId = new Map<string, Session>();
  readonly #byDevice = new Map<string, Set<{ session: Session; entry: SubscriptionEntry }>>();
  /** Subscriptions on the channel 'feed' (stored states), connected or not. */
  #feeds = 0;
  /** Subscriptions on the channel 'alarm' (alarm changes), connected or not. */
  #alarms = 0;

  constructor(options: SessionsOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#byClientId.size;
  }

  /**
   * Binds `clientId` to a new connection of `owner`. `clean`: MQTT 5 Clean Start / 3.1.1 clean
   * session — a previous session of the same owner is discarded.
   */
  claim(clientId: string, owner: string, clean: boolean, holder: SessionHolder): Claim {
    const existing = this.#byClientId.get(clientId);
    if (existing !== undefined && existing.owner !== owner) return { ok: false };
    const previous = existing?.holder;
    if (existing !== undefined) {
      existing.timer?.cancel();
      existing.timer = undefined;
      existing.holder = holder;
      if (!clean) return { ok: true, session: existing, present: true, previous };
      this.#drop(existing);
    }
    if (this.#byClientId.size >= this.#o.maxSessions) this.#evictOldestOffline();
    const session: Session = {
      clientId, owner, subscriptions: new Map(), holder, expiryMs: 0, timer: undefined, disconnectedAt: 0, refused: undefined,
    };
    this.#byClientId.set(clientId, session);
    return { ok: true, session, present: false, previous };
  }

  /** The connection holding `session` closed; the session ends now or when its expiry passes. */
  release(session: Session, holder: SessionHolder): void {
    if (session.holder !== holder) return;
    session.holder = undefined;
    session.disconnectedAt = this.#o.clock.now();
    if (session.expiryMs <= 0) {
      this.#drop(session);
      return;
    }
    session.timer = this.#o.clock.setTimeout(() => {
      if (session.holder === undefined) this.#drop(session);
    }, session.expiryMs);
  }

  /** Ends every session of `owner` (a deleted device, a revoked principal). */
  endOwner(owner: string): void {
    for (const session of [...this.#byClientId.values()]) if (session.owner === owner && session.holder === undefined) this.#drop(session);
  }

  subscribe(session: Session, entry: SubscriptionEntry): void {
    this.unsubscribe(session, entry.filter);
    session.subscriptions.set(entry.filter, entry);
    let set = this.#byDevice.get(entry.deviceId);
    if (set === undefined) this.#byDevice.set(entry.deviceId, (set = new Set()));
    set.add({ session, entry });
    if (entry.channel === 'feed') this.#feeds++;
    if (entry.channel === 'alarm') this.#alarms++;
  }

  unsubscribe(session: Session, filter: string): boolean {
    const entry = session.subscriptions.get(filter);
    if (entry === undefined) return false;
    session.subscriptions.delete(filter);
    if (entry.channel === 'feed') this.#feeds--;
    if (entry.channel === 'alarm') this.#alarms--;
    const set = this.#byDevice.get(entry.deviceId);
    if (set !== undefined) {
      for (const item of set) if (item.session === session && item.entry === entry) set.delete(item);
      if (set.size === 0) this.#byDevice.delete(entry.deviceId);
    }
    return true;
  }

  /** Whether any session follows a feed: until one does, stored states need not be published. */
  get followsFeeds(): boolean {
    return this.#feeds > 0;
  }

  /** Whether any session follows alarm changes: until one does, they need not be published. */
  get followsAlarms(): boolean {
    return this.#alarms > 0;
  }

  /** Subscriptions about `deviceId` (connected or not). */
  /** The devices some session subscribed for. */
  devices(): IterableIterator<string> {
    return this.#byDevice.keys();
  }

  subscribersOf(deviceId: string): ReadonlySet<{ session: Session; entry: SubscriptionEntry }> | undefined {
    return this.#byDevice.get(deviceId);
  }

  /** Drops subscriptions about a deleted device held by other principals' sessions (users following its feed). */
  forgetDevice(deviceId: string): void {
    for (const { session, entry } of [...(this.#byDevice.get(deviceId) ?? [])]) this.unsubscribe(session, entry.filter);
  }

  close(): void {
    for (const session of this.#byClientId.values()) session.timer?.cancel();
    this.#byClientId.clear();
    this.#byDevice.clear();
    this.#feeds = 0;
    this.#alarms = 0;
  }

  #drop(session: Session): void {
    session.timer?.cancel();
    for (const filter of [...session.subscriptions.keys()]) this.unsubscribe(session, filter);
    if (this.#byClientId.get(session.clientId) === session) this.#byClientId.delete(session.clientId);
  }

  #evictOldestOffline(): void {
    let oldest: Session | undefined;
    for (const session of this.#byClientId.values()) {
      if (session.holder === undefined && (oldest === undefined || session.disconnectedAt < oldest.disconnectedAt)) oldest = session;
    }
    if (oldest !== undefined) this.#drop(oldest);
  }
}
