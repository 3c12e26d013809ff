/**
 * One actor per device with records that carry no admission decision: admits them strictly in
 * order as an edge would (admitUplink), holding the device's compiled profiles and decoder. A
 * record with the edge's decision that queued behind them is stored as decided. The lifecycle is the xstate machine in deviceMachine.ts,
 * stepped through its transition table;
 * the hot path (decode, validate, hand rows to the sink) is plain code with no awaits, so an active
 * device's uplink is processed inline as it is dispatched.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { FleetError, toFleetError } from '../kernel/errors.ts';
import type { DeviceDirectory, DeviceInfo } from '../ports/directory.ts';
import type { AdmittedUplink, UplinkEnvelope } from '../../schemas/messages.ts';
import { admitUplink, outputOf } from '../uplink/admission/admitUplink.ts';
import type { CompiledDevice } from '../uplink/admission/compileDevice.ts';
import type { UplinkOutput } from '../uplink/admission/processUplink.ts';
import type { UplinkSink, UplinkWork } from '../uplink/pipeline/types.ts';
import { Mailbox } from './Mailbox.ts';
import { initialDeviceState, nextDeviceState, type DeviceEvent, type DeviceLifecycleState } from './deviceMachine.ts';

export interface DeviceActorEnv {
  directory: DeviceDirectory;
  compile(info: DeviceInfo): CompiledDevice;
  sink: UplinkSink;
  clock: Clock;
  mailboxCapacity: number;
  /** Device info older than this is re-read from the directory on the next uplink (ms). */
  refreshAfterMs: number;
  /** Delay before retrying a failed directory read (ms). */
  loadRetryMs: number;
  onLoadError?(deviceId: string, error: FleetError): void;
}

export class DeviceActor {
  readonly deviceId: string;
  readonly mailbox: Mailbox<UplinkWork>;
  lastActive: number;
  #env: DeviceActorEnv;
  #state: DeviceLifecycleState = initialDeviceState;
  #device: CompiledDevice | undefined;
  /** Set when the device cannot be processed at all (unknown, or its profiles do not compile). */
  #rejectAll: { code: 'UNKNOWN_DEVICE' | 'PROCESSING_FAILED'; reason: string } | undefined;
  #loadedAt = 0;
  #retryTimer: TimerHandle | undefined;

  constructor(deviceId: string, env: DeviceActorEnv) {
    this.deviceId = deviceId;
    this.#env = env;
    this.mailbox = new Mailbox(env.mailboxCapacity);
    this.lastActive = env.clock.now();
    this.#load();
  }

  get state(): DeviceLifecycleState {
    return this.#state;
  }

  #send(event: DeviceEvent['type']): void {
    this.#state = nextDeviceState(this.#state, event);
  }

  /** True when the actor holds no work and no load is under way, so it may be passivated. */
  get idle(): boolean {
    return this.mailbox.size === 0 && this.state !== 'loading';
  }

  /**
   * Processes `work` now when the device is ready and nothing is queued before it, else queues it.
   * Returns false when the mailbox is full: await `mailbox.space()` and offer again.
   */
  offer(work: UplinkWork): boolean {
    const now = this.#env.clock.now();
    this.lastActive = now;
    const state = this.state;
    if (state !== 'loading' && now - this.#loadedAt > this.#env.refreshAfterMs) {
      this.#send('STALE');
      this.#load();
    }
    if (this.state !== 'loading' && this.mailbox.size === 0) {
      this.#process(work);
      return true;
    }
    return this.mailbox.offer(work);
  }

  /** Forgets the cached device so the next uplink re-reads it (profiles or payload changed). */
  invalidate(): void {
    this.#loadedAt = Number.NEGATIVE_INFINITY;
  }

  passivate(): void {
    this.#retryTimer?.cancel();
    this.#send('PASSIVATE');
    this.#device = undefined;
  }

  #load(): void {
    const env = this.#env;
    env.directory.getDevice(this.deviceId).then(
      (info) => {
        if (this.state !== 'loading') return;
        this.#loadedAt = env.clock.now();
        if (info === undefined) {
          this.#device = undefined;
          this.#rejectAll = { code: 'UNKNOWN_DEVICE', reason: `device ${this.deviceId} does not exist` };
          this.#send('NOT_FOUND');
        } else {
          try {
            this.#device = env.compile(info);
            this.#rejectAll = undefined;
          } catch (error) {
            this.#device = undefined;
            this.#rejectAll = { code: 'PROCESSING_FAILED', reason: `device ${this.deviceId} cannot be compiled: ${toFleetError(error).message}` };
          }
          this.#send('LOADED');
        }
        this.#drain();
      },
      (error: unknown) => {
        if (this.state !== 'loading') return;
        const fleetError = toFleetError(error, 'UNAVAILABLE');
        env.onLoadError?.(this.deviceId, fleetError);
        this.#send('LOAD_FAILED');
        // Queued work waits (the full mailbox pushes back to the source) until the directory answers.
        this.#retryTimer = env.clock.setTimeout(() => {
          this.#retryTimer = undefined;
          if (this.state === 'loading') this.#load();
        }, env.loadRetryMs);
      },
    );
  }

  #drain(): void {
    let work: UplinkWork | undefined;
    while (this.state !== 'loading' && (work = this.mailbox.take()) !== undefined) this.#process(work);
  }

  #process(work: UplinkWork): void {
    this.#env.sink.emit(work, this.#outputOf(work.envelope));
  }

  #outputOf(envelope: UplinkEnvelope): UplinkOutput {
    // Admitted at the edge (admission/admitUplink.ts), queued behind this device's earlier records: stored as decided there.
    if (envelope.admitted !== undefined) return outputOf(envelope as UplinkEnvelope & { admitted: AdmittedUplink });
    if (this.#rejectAll !== undefined || this.#device === undefined) {
      const reject = this.#rejectAll ?? { code: 'PROCESSING_FAILED' as const, reason: 'device not loaded' };
      return { rows: [], rejections: [{ code: reject.code, reason: reject.reason }] };
    }
    try {
      const admission = admitUplink(envelope, this.#device);
      return admission.verdict === 'refused' ? { rows: [], rejections: admission.rejections } : { rows: admission.rows, rejections: admission.dropped };
    } catch (error) {
      // A defect in one uplink's processing never stops the actor: the uplink is dead-lettered.
      return { rows: [], rejections: [{ code: 'PROCESSING_FAILED', reason: toFleetError(error).message }] };
    }
  }
}
