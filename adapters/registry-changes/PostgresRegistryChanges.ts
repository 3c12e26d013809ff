/**
 * RegistryChanges between every process sharing a PostgreSQL registry (engine/ports/registryChanges.ts),
 * over LISTEN/NOTIFY on the registry's own database.
 *
 * Why PostgreSQL rather than a Kafka topic: the registry is the one store every process that changes
 * it is already connected to — edges, engines, and the admin CLI, which runs without the service and
 * without Kafka settings. A change is announced on the connection string it was made through, and
 * needs no topic, retention or consumer group; NOTIFY reaches every listening session in
 * milliseconds. What a topic would add — replay of changes missed while away — is replaced by
 * `resync`: a process that lost its connection drops everything cached once it is back.
 *
 * - Own changes are delivered to this process's listeners at once, before publish resolves; the
 *   notification carries this process's random `origin`, so its echo is skipped.
 * - With `announcedByDatabase` (the service), the registry's own triggers send the notification from
 *   the transaction that made the change (migration 4), so a committed change is announced even if
 *   the process dies before publish, and one made by any SQL client is too; publish() then tells
 *   this process's listeners only, and the pool's connections carry the same `origin`.
 * - One dedicated connection LISTENs and sends. When it is lost it is reopened with a backoff on the
 *   Clock, LISTEN runs again, notifications published meanwhile (at most `maxPending`, oldest dropped
 *   first) are sent, and listeners get `resync`.
 * - Payloads are a few hundred bytes (schemas/registryChanges.ts), far under NOTIFY's 8000. Anything
 *   else on the channel — another client of the database, a newer version — is ignored with a warning
 *   (at most one a second, counting what was ignored): it cannot crash or flood the process.
 */
import pg from 'pg';
import { createHash } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { exponentialBackoff, type Backoff } from '../../engine/kernel/backoff.ts';
import type { Clock, TimerHandle } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { randomBase62 } from '../../engine/kernel/ids.ts';
import { Listeners } from '../../engine/kernel/Listeners.ts';
import { silentLogger, type Logger } from '../../engine/kernel/logger.ts';
import type { RegistryChange, RegistryChanges } from '../../engine/ports/registryChanges.ts';
import { RegistryChangeNotification } from '../../schemas/registryChanges.ts';

export interface PostgresRegistryChangesOptions {
  /** Connection string of the registry's database (one session is held open for LISTEN). */
  url: string;
  /**
   * The registry's schema (PostgresRegistryOptions.schema): registries in other schemas use other
   * channels. Unset: the schema the server's search_path gives (normally `public`), as the registry.
   */
  schema?: string;
  /**
   * The registry announces its changes itself (migration 4: NOTIFY from the transaction that makes
   * a change, sent only if it commits): publish() then only tells this process's listeners, and
   * other processes hear the database's announcement. Unset (false): publish() sends the change too.
   */
  announcedByDatabase?: boolean;
  /** Names this process in notifications (PostgresRegistryOptions.origin, the same value). Default: random. */
  origin?: string;
  clock: Clock;
  logger?: Logger;
  /** Waiting for the connection before giving up this attempt, ms. Default 5000. */
  connectTimeoutMs?: number;
  /** First wait before reconnecting after the connection was lost, ms; doubles up to reconnectMaxMs. Default 100. */
  reconnectInitialMs?: number;
  /** Longest wait between reconnection attempts, ms. Default 2000. */
  reconnectMaxMs?: number;
  /** Notifications waiting to be sent (kept while disconnected, sent once reconnected); the oldest is dropped beyond. Default 1000. */
  maxPending?: number;
}

/** Characters; NOTIFY's limit is 8000 bytes, the largest change here ~150. */
export const MAX_NOTIFICATION_CHARS = 1024;
const checkNotification = Compile(RegistryChangeNotification);
/** Notifications per statement: NOTIFYs of one statement are delivered together, in order. */
const MAX_BATCH = 100;
const NOTIFY_BATCH = 'SELECT pg_notify($1, payload) FROM unnest($2::text[]) WITH ORDINALITY AS queued(payload, n) ORDER BY n';
/** PostgreSQL truncates identifiers past 63 bytes (NAMEDATALEN - 1); pg_notify refuses them. */
const MAX_CHANNEL = 63;

/**
 * The channel of a registry schema: readable where it fits, hashed where it would not. Migration 4's
 * registry_announce names the same channel from inside the database.
 */
export function changesChannel(schema: string): string {
  const base = 'fleetstream_registry';
  const named = `${base}_${schema}`;
  return named.length <= MAX_CHANNEL ? named : `${base}_${createHash('sha256').update(schema).digest('hex').slice(0, 32)}`;
}

export interface PostgresRegistryChangesStats {
  /** Notifications sent to the database. */
  sent: number;
  /** Changes of other processes delivered here. */
  received: number;
  /** Notifications on the channel that were not a change (malformed, oversized, unknown version). */
  ignored: number;
  /** Changes of this process never sent (queue full while disconnected, or closed before reconnecting). */
  dropped: number;
  /** Times the connection was reopened. */
  reconnects: number;
}

export class PostgresRegistryChanges implements RegistryChanges {
  /** Known once connected (the schema may come from the server's search_path). */
  #channel: string | undefined;
  /** Names this process in its notifications. */
  readonly origin: string;
  readonly stats: PostgresRegistryChangesStats = { sent: 0, received: 0, ignored: 0, dropped: 0, reconnects: 0 };
  readonly #options: PostgresRegistryChangesOptions;
  readonly #logger: Logger;
  readonly #listeners: Listeners<RegistryChange>;
  readonly #backoff: Backoff;
  readonly #maxPending: number;
  /** Notifications not sent yet, oldest first; `done` resolves the publish waiting for it (at most once matters). */
  readonly #outbox: Array<{ payload: string; done: () => void }> = [];
  #sending = false;
  #client: pg.Client | undefined;
  #attempt = 0;
  #timer: TimerHandle | undefined;
  #closed = false;
  #ignoredSinceWarning = 0;
  #lastIgnoredWarning = Number.NEGATIVE_INFINITY;

  /** Connects and LISTENs before resolving; UNAVAILABLE when the database cannot be reached. */
  static async open(options: PostgresRegistryChangesOptions): Promise<PostgresRegistryChanges> {
    const changes = new PostgresRegistryChanges(options);
    try {
      await changes.#connect();
    } catch (error) {
      await changes.close();
      throw new FleetError('UNAVAILABLE', `registry changes: cannot LISTEN on PostgreSQL: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    return changes;
  }

  private constructor(options: PostgresRegistryChangesOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.origin = options.origin ?? randomBase62(16);
    if (options.schema !== undefined) this.#channel = changesChannel(options.schema);
    this.#listeners = new Listeners((error) => this.#logger.warn('registry changes: a listener failed', { error }));
    this.#backoff = exponentialBackoff({ initialMs: options.reconnectInitialMs ?? 100, maxMs: options.reconnectMaxMs ?? 2000 });
    this.#maxPending = options.maxPending ?? 1000;
    if (!Number.isSafeInteger(this.#maxPending) || this.#maxPending < 0) throw new RangeError('maxPending must be an integer >= 0');
  }

  /** The channel listened on (and sent on). */
  get channel(): string {
    if (this.#channel === undefined) throw new FleetError('INTERNAL', 'registry changes: not connected yet');
    return this.#channel;
  }

  /** True while the LISTEN connection is up. */
  get connected(): boolean {
    return this.#client !== undefined;
  }

  async publish(change: RegistryChange): Promise<void> {
    if (this.#closed) throw new FleetError('CLOSED', 'registry changes: closed');
    this.#listeners.emit(change);
    if (this.#options.announcedByDatabase === true) return;
    const notification: RegistryChangeNotification = { v: 1, origin: this.origin, change };
    await this.#send(JSON.stringify(notification));
  }

  subscribe(listener: (change: RegistryChange) => void): () => void {
    if (this.#closed) return () => undefined;
    return this.#listeners.add(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#outbox.length > 0) {
      this.stats.dropped += this.#outbox.length;
      this.#logger.warn('registry changes: closing with changes never sent to other processes', { count: this.#outbox.length });
      for (const entry of this.#outbox.splice(0)) entry.done();
    }
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  /**
   * Queues the notification and resolves once it was sent, or kept for the reconnection (no
   * connection, or the send failed): publish never waits for a database that is away.
   */
  #send(payload: string): Promise<void> {
    return new Promise<void>((done) => {
      if (this.#outbox.length >= this.#maxPending) {
        this.#outbox.shift()!.done();
        this.stats.dropped++;
        this.#logger.warn('registry changes: too many changes waiting for PostgreSQL; the oldest was dropped (other processes resync when they reconnect)', { maxPending: this.#maxPending });
      }
      if (this.#maxPending === 0) {
        this.stats.dropped++;
        done();
        return;
      }
      this.#outbox.push({ payload, done });
      if (this.#client === undefined) done();
      else this.#pump();
    });
  }

  /** One sender at a time, so notifications leave in publish order; what queued meanwhile goes in one statement. */
  #pump(): void {
    if (this.#sending || this.#client === undefined || this.#outbox.length === 0) return;
    this.#sending = true;
    void this.#drain().finally(() => {
      this.#sending = false;
      this.#pump();
    });
  }

  async #drain(): Promise<void> {
    for (;;) {
      const client = this.#client;
      if (client === undefined || this.#outbox.length === 0) return;
      const batch = this.#outbox.slice(0, MAX_BATCH);
      try {
        await client.query(NOTIFY_BATCH, [this.channel, batch.map((entry) => entry.payload)]);
      } catch (error) {
        // Kept for the reconnection; their publishers need not wait for it.
        for (const entry of batch) entry.done();
        this.#lost(client, error);
        return;
      }
      this.#outbox.splice(0, batch.length);
      this.stats.sent += batch.length;
      for (const entry of batch) entry.done();
    }
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.#options.url,
      connectionTimeoutMillis: this.#options.connectTimeoutMs ?? 5000,
      // Names the session in pg_stat_activity (an operator can tell which process holds it).
      application_name: `fleetstream-changes-${this.origin}`,
      // A connection that died without a word (a peer gone, a NAT that forgot it) is noticed and reopened.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on('notification', (message) => this.#receive(message.channel, message.payload));
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, undefined));
    try {
      await client.connect();
      this.#channel ??= changesChannel((await client.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0].schema);
      await client.query(`LISTEN "${this.#channel}"`);
    } catch (error) {
      client.removeAllListeners('notification');
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#attempt = 0;
    // What was published while away leaves first, in order.
    this.#pump();
  }

  /** The connection of `client` is gone (error or end); ignored for a connection no longer current. */
  #lost(client: pg.Client, error: unknown): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    if (this.#closed) return;
    this.#logger.warn('registry changes: connection to PostgreSQL lost; reconnecting', { error: error instanceof Error ? error : undefined });
    this.#reconnectLater();
  }

  #reconnectLater(): void {
    if (this.#closed || this.#timer !== undefined) return;
    const delay = this.#backoff(Math.min(this.#attempt++, 30));
    this.#timer = this.#options.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#connect().then(
        () => {
          if (this.#client === undefined) return;
          this.stats.reconnects++;
          this.#logger.info('registry changes: reconnected to PostgreSQL; dropping cached answers (changes may have been missed)');
          this.#listeners.emit({ kind: 'resync' });
        },
        (error: unknown) => {
          this.#logger.warn('registry changes: reconnecting to PostgreSQL failed; trying again', { error: error instanceof Error ? error : undefined });
          this.#reconnectLater();
        },
      );
    }, delay);
  }

  #receive(channel: string, payload: string | undefined): void {
    if (this.#closed || channel !== this.#channel) return;
    let notification: unknown;
    if (payload === undefined || payload.length > MAX_NOTIFICATION_CHARS) {
      this.#ignore(payload === undefined ? 'no payload' : `payload of ${payload.length} characters`);
      return;
    }
    try {
      notification = JSON.parse(payload);
    } catch {
      this.#ignore('payload is not JSON');
      return;
    }
    if (!checkNotification.Check(notification)) {
      const first = checkNotification.Errors(notification)[0];
      this.#ignore(`not a registry change${first ? `: ${first.instancePath || '/'} ${first.message}` : ''}`);
      return;
    }
    if (notification.origin === this.origin) return; // delivered when published
    this.stats.received++;
    this.#listeners.emit(notification.change);
  }

  #ignore(reason: string): void {
    this.stats.ignored++;
    this.#ignoredSinceWarning++;
    const now = this.#options.clock.now();
    if (now - this.#lastIgnoredWarning < 1000) return;
    this.#logger.warn('registry changes: ignored a notification on the channel', { channel: this.channel, reason, ignoredSinceLastWarning: this.#ignoredSinceWarning });
    this.#lastIgnoredWarning = now;
    this.#ignoredSinceWarning = 0;
  }
}
