/**
 * What every edge (HTTP, MQTT, LPWAN) hands its uplinks to: the engine's one admission step
 * (engine/uplink/UplinkAdmission.ts). Edges keep their channel rules — authentication, topic and
 * path rules, size limits, content-type detection — and let admission decide what the uplink
 * yields, record refusals and make accepted uplinks durable.
 */
import type { ErrorCode } from '../kernel/errors.ts';
import type { DeviceInfo } from './directory.ts';
import type { UplinkEnvelope } from '../../schemas/messages.ts';

/** What an edge knows about an uplink; the ingest adds `id` and `receivedAt` unless admission already gave them. */
export type UplinkSubmission = Omit<UplinkEnvelope, 'id' | 'receivedAt'> & Partial<Pick<UplinkEnvelope, 'id' | 'receivedAt'>>;

export interface RefusedEntry {
  code: ErrorCode;
  reason: string;
  /** The asset concerned; absent when the whole message (or a whole batch item) is refused. */
  asset?: string;
  /** The batch item concerned (index in an array of device states). */
  item?: number;
}

export type AdmissionOutcome =
  /** Durable in the log; `dropped` entries are recorded as the device's rejections. */
  | { status: 'accepted'; uplinkId: string; receivedAt: number; dropped: RefusedEntry[] }
  /**
   * Nothing stored; recorded as the device's rejections (dead-letter topic). Over the ground's
   * states per second: one QUOTA_EXCEEDED entry and `retryAfterSeconds`, recorded at most once per
   * device per second (a flood is not written out refusal by refusal).
   */
  | { status: 'refused'; uplinkId: string; receivedAt: number; rejections: RefusedEntry[]; retryAfterSeconds?: number };

export interface UplinkAdmissionPort {
  /**
   * Admits an uplink of `device`. Resolves with the outcome; rejects only with what a retry may
   * cure (BACKPRESSURE, UNAVAILABLE → 503 / MQTT not acknowledged) or CLOSED.
   */
  admit(device: DeviceInfo, submission: UplinkSubmission): Promise<AdmissionOutcome>;
  /**
   * admit() without promises, for a channel that admits at message rates (the MQTT edge): `done` is
   * called once, never before admitThen returns, with the outcome, or with the error admit() would
   * reject with.
   */
  admitThen(device: DeviceInfo, submission: UplinkSubmission, done: (error: unknown, outcome?: AdmissionOutcome) => void): void;
  /**
   * Records a refusal a channel decided itself (a topic the device may not publish to, an LPWAN
   * payload that cannot be read, a device unknown to the network) the same way admission records
   * its own. `submission.deviceId` is '' when no device is known.
   */
  refuse(submission: UplinkSubmission, refusal: RefusedEntry): Promise<AdmissionOutcome>;
}
