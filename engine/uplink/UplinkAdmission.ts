/**
 * The admission step every edge calls (engine/ports/uplinkAdmission.ts): gives the uplink its id
 * and receive time, decides once what it yields (admission/admitUplink.ts) with the device's
 * compiled profiles and decoder, then either appends it — with that decision — to topic `uplinks`
 * (resolving once durable), or records the refusal as dead letters (topic `dead-letters` and the
 * device's rejections). Refusals are recorded the same way from every channel.
 */
import type { Clock } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import { newUplinkId } from '../kernel/ids.ts';
import type { DeviceInfo } from '../ports/directory.ts';
import type { AdmissionOutcome, RefusedEntry, UplinkAdmissionPort, UplinkSubmission } from '../ports/uplinkAdmission.ts';
import type { UplinkEnvelope } from '../../schemas/messages.ts';
import { admitUplink, carried, type Admission } from './admission/admitUplink.ts';
import { compileDevice, type CompiledDevice } from './admission/compileDevice.ts';
import type { Rejection } from './admission/processUplink.ts';
import type { UplinkIngest } from './UplinkIngest.ts';
import type { StatesQuota } from '../quotas/GroundRates.ts';

/** A device's quota refusals are recorded at most this often; the others are answered only. */
const QUOTA_RECORD_EVERY_MS = 1000;
/** Devices whose last recorded quota refusal is remembered (then forgotten all at once). */
const QUOTA_RECORD_DEVICES = 10_000;

export interface UplinkAdmissionOptions {
  /** engine/uplink/UplinkIngest.ts: calls back once the uplink is durable in the log. */
  ingest: Pick<UplinkIngest, 'appendThen'>;
  /** engine/uplink/pipeline/DeadLetterSink.ts: resolves once the dead letters are durable. */
  deadLetters: { add(envelope: UplinkEnvelope, rejections: readonly Rejection[]): Promise<unknown> };
  clock: Clock;
  /** Compiles a device's profiles and decoder; default compileDevice without binary decoding. */
  compile?(info: DeviceInfo): CompiledDevice;
  /** Uplink ids from the receive time; default engine/kernel/ids.ts newUplinkId (time-ordered, compact in the store). */
  newId?(receivedAt: number): string;
  /** The states-per-second quota of grounds (engine/quotas/GroundRates.ts). Default: no limit. */
  quota?: StatesQuota;
  /** A refusal that could not be recorded (the log is away); the refusal itself still stands. */
  onRecordFailed?(error: FleetError): void;
}

export class UplinkAdmission implements UplinkAdmissionPort {
  readonly #o: UplinkAdmissionOptions;
  readonly #compile: (info: DeviceInfo) => CompiledDevice;
  readonly #newId: (receivedAt: number) => string;
  /** Per device object: edges cache a device for a while, and a changed device is a new object. */
  readonly #compiled = new WeakMap<DeviceInfo, CompiledDevice>();
  /** Device id → when its last quota refusal was recorded. */
  readonly #quotaRecorded = new Map<string, number>();

  constructor(options: UplinkAdmissionOptions) {
    this.#o = options;
    this.#compile = options.compile ?? ((info) => compileDevice(info));
    this.#newId = options.newId ?? newUplinkId;
  }

  admit(device: DeviceInfo, submission: UplinkSubmission): Promise<AdmissionOutcome> {
    return new Promise((resolve, reject) => {
      this.admitThen(device, submission, (error, outcome) => (outcome === undefined ? reject(error) : resolve(outcome)));
    });
  }

  admitThen(device: DeviceInfo, submission: UplinkSubmission, done: (error: unknown, outcome?: AdmissionOutcome) => void): void {
    let envelope: UplinkEnvelope;
    let admission: Admission;
    try {
      envelope = this.#envelope(submission);
      let compiled: CompiledDevice;
      try {
        compiled = this.#compiledOf(device);
      } catch (error) {
        // A stored profile or script that no longer compiles refuses the device's uplinks, not the edge.
        this.#refusedThen(envelope, [{ code: 'PROCESSING_FAILED', reason: `device ${device.id} cannot be compiled: ${toFleetError(error).message}` }], done);
        return;
      }
      admission = admitUplink(envelope, compiled);
    } catch (error) {
      queueMicrotask(() => done(error));
      return;
    }
    if (admission.verdict === 'refused') {
      this.#refusedThen(envelope, admission.rejections, done);
      return;
    }
    const quota = this.#o.quota;
    if (quota !== undefined && device.groundId !== undefined) {
      const retryAfter = quota.take(device.groundId, admission.rows.length);
      if (retryAfter > 0) {
        this.#overQuota(envelope, device.groundId, retryAfter, done);
        return;
      }
    }
    // The envelope is this call's own object: the decision goes on it, not on a copy.
    envelope.admitted = carried(admission);
    // What the answer needs, not the envelope: an uplink waiting for the log keeps only these alive
    // (its body and decoded states go once it is encoded), so the young generation's survivors stay small.
    const { id, receivedAt } = envelope;
    const { dropped } = admission;
    const durable = (failure?: FleetError) => {
      if (failure !== undefined) done(failure);
      else done(undefined, { status: 'accepted', uplinkId: id, receivedAt, dropped });
    };
    this.#o.ingest.appendThen(envelope, durable);
  }

  refuse(submission: UplinkSubmission, refusal: RefusedEntry): Promise<AdmissionOutcome> {
    return this.#refused(this.#envelope(submission), [refusal]);
  }

  #envelope(submission: UplinkSubmission): UplinkEnvelope {
    const receivedAt = submission.receivedAt ?? this.#o.clock.now();
    return { ...submission, id: submission.id ?? this.#newId(receivedAt), receivedAt };
  }

  #compiledOf(device: DeviceInfo): CompiledDevice {
    let compiled = this.#compiled.get(device);
    if (compiled === undefined) {
      compiled = this.#compile(device);
      this.#compiled.set(device, compiled);
    }
    return compiled;
  }

  /** Over the ground's states per second: refused; recorded unless the device's last one was recorded within a second. */
  #overQuota(envelope: UplinkEnvelope, groundId: string, retryAfter: number, done: (error: unknown, outcome?: AdmissionOutcome) => void): void {
    const rejections: Rejection[] = [{ code: 'QUOTA_EXCEEDED', reason: `ground ${groundId} is over its quota of states per second` }];
    const retryAfterSeconds = Math.max(1, Math.ceil(retryAfter));
    const answer = (outcome: AdmissionOutcome) => done(undefined, outcome.status === 'refused' ? { ...outcome, retryAfterSeconds } : outcome);
    const now = this.#o.clock.now();
    const last = this.#quotaRecorded.get(envelope.deviceId);
    if (last !== undefined && now - last < QUOTA_RECORD_EVERY_MS) {
      queueMicrotask(() => answer({ status: 'refused', uplinkId: envelope.id, receivedAt: envelope.receivedAt, rejections }));
      return;
    }
    if (this.#quotaRecorded.size >= QUOTA_RECORD_DEVICES) this.#quotaRecorded.clear();
    this.#quotaRecorded.set(envelope.deviceId, now);
    this.#refused(envelope, rejections).then(answer, done);
  }

  #refusedThen(envelope: UplinkEnvelope, rejections: Rejection[], done: (error: unknown, outcome?: AdmissionOutcome) => void): void {
    this.#refused(envelope, rejections).then((outcome) => done(undefined, outcome), done);
  }

  async #refused(envelope: UplinkEnvelope, rejections: Rejection[]): Promise<AdmissionOutcome> {
    // The envelope is kept until its dead letters are durable: a body that views a larger buffer (an
    // edge's read chunk) is copied out, so that a refused uplink does not keep all of it.
    const body = envelope.body;
    if (body.byteLength !== body.buffer.byteLength) envelope = { ...envelope, body: new Uint8Array(body) };
    try {
      await this.#o.deadLetters.add(envelope, rejections);
    } catch (error) {
      this.#o.onRecordFailed?.(toFleetError(error));
    }
    return { status: 'refused', uplinkId: envelope.id, receivedAt: envelope.receivedAt, rejections };
  }
}
