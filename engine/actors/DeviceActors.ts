/**
 * The set of live device actors. An actor is created on a device's first record of topic `uplinks`
 * that carries no admission decision, and passivated after `passivateAfterMs` without work, so
 * memory is bounded by devices sending such records, not fleet size. Records admitted at the edge
 * come here only while their device's earlier records wait (UplinkPipeline).
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { DeviceDirectory, DeviceInfo } from '../ports/directory.ts';
import { compileDevice, type CompiledDevice } from '../uplink/admission/compileDevice.ts';
import type { UndecidedUplinks, UplinkSink, UplinkWork } from '../uplink/pipeline/types.ts';
import { DeviceActor, type DeviceActorEnv } from './DeviceActor.ts';

export interface DeviceActorsOptions {
  directory: DeviceDirectory;
  /** Compiles a device for its actor; default compileDevice with no binary decoder. */
  compile?(info: DeviceInfo): CompiledDevice;
  sink: UplinkSink;
  clock: Clock;
  /** Uplinks queued per device before its source is paused. Default 256. */
  mailboxCapacity?: number;
  /** Idle time after which an actor is passivated (ms). Default 60 000. */
  passivateAfterMs?: number;
  /** How often idle actors are looked for (ms). Default 1 000. */
  sweepIntervalMs?: number;
  /** Device info is re-read from the directory when older than this (ms). Default 30 000. */
  refreshAfterMs?: number;
  /** Delay before retrying a failed directory read (ms). Default 1 000. */
  loadRetryMs?: number;
  /** Soft cap on live actors: above it, idle actors are passivated early. Default 200 000. */
  maxActors?: number;
  onLoadError?(deviceId: string, error: FleetError): void;
}

export class DeviceActors implements UndecidedUplinks {
  readonly #actors = new Map<string, DeviceActor>();
  readonly #env: DeviceActorEnv;
  readonly #clock: Clock;
  readonly #passivateAfterMs: number;
  readonly #sweepIntervalMs: number;
  readonly #maxActors: number;
  #sweepTimer: TimerHandle | undefined;
  #stopped = false;
  /** Actors created and passivated since start. */
  created = 0;
  passivated = 0;

  constructor(options: DeviceActorsOptions) {
    this.#clock = options.clock;
    this.#passivateAfterMs = options.passivateAfterMs ?? 60_000;
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
    this.#maxActors = options.maxActors ?? 200_000;
    this.#env = {
      directory: options.directory,
      compile: options.compile ?? ((info) => compileDevice(info)),
      sink: options.sink,
      clock: options.clock,
      mailboxCapacity: options.mailboxCapacity ?? 256,
      refreshAfterMs: options.refreshAfterMs ?? 30_000,
      loadRetryMs: options.loadRetryMs ?? 1_000,
      onLoadError: options.onLoadError,
    };
    this.#scheduleSweep();
  }

  get size(): number {
    return this.#actors.size;
  }

  /** Uplinks waiting in mailboxes across all actors. */
  get queued(): number {
    let n = 0;
    for (const actor of this.#actors.values()) n += actor.mailbox.size;
    return n;
  }

  holds(deviceId: string): boolean {
    const actor = this.#actors.get(deviceId);
    return actor !== undefined && actor.mailbox.size > 0;
  }

  actor(deviceId: string): DeviceActor | undefined {
    return this.#actors.get(deviceId);
  }

  /**
   * Hands an uplink to its device's actor. Returns undefined when accepted, or a promise to await
   * when the device's mailbox is full (the caller stops reading that partition until it resolves).
   */
  dispatch(work: UplinkWork): Promise<void> | undefined {
    const deviceId = work.envelope.deviceId;
    let actor = this.#actors.get(deviceId);
    if (actor === undefined) {
      if (this.#actors.size >= this.#maxActors) this.sweep(0);
      actor = new DeviceActor(deviceId, this.#env);
      this.#actors.set(deviceId, actor);
      this.created++;
    }
    if (actor.offer(work)) return undefined;
    const full = actor;
    return full.mailbox.space().then(() => {
      if (!full.offer(work)) return this.dispatch(work);
      return undefined;
    });
  }

  /** Forgets a device's cached profiles (after its assets or payload settings changed). */
  invalidate(deviceId: string): void {
    this.#actors.get(deviceId)?.invalidate();
  }

  /** Forgets every device's cached profiles (registry changes may have been missed). */
  invalidateAll(): void {
    for (const actor of this.#actors.values()) actor.invalidate();
  }

  /** Passivates actors idle for at least `idleMs`. */
  sweep(idleMs = this.#passivateAfterMs): number {
    const cutoff = this.#clock.now() - idleMs;
    let removed = 0;
    for (const [id, actor] of this.#actors) {
      if (actor.idle && actor.lastActive <= cutoff) {
        actor.passivate();
        this.#actors.delete(id);
        removed++;
      }
    }
    this.passivated += removed;
    return removed;
  }

  stop(): void {
    this.#stopped = true;
    this.#sweepTimer?.cancel();
    for (const actor of this.#actors.values()) actor.passivate();
    this.#actors.clear();
  }

  #scheduleSweep(): void {
    if (this.#stopped) return;
    this.#sweepTimer = this.#clock.setTimeout(() => {
      this.sweep();
      this.#scheduleSweep();
    }, this.#sweepIntervalMs);
  }
}

/** Device actors as an UplinkPipeline's `undecided` option: the pipeline builds them with itself as their sink. */
export function deviceActors(options: Omit<DeviceActorsOptions, 'sink'>): (sink: UplinkSink) => DeviceActors {
  return (sink) => new DeviceActors({ ...options, sink });
}
