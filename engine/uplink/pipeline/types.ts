/**
 * What the uplink pipeline hands to the per-device runtime (engine/actors) for the records of topic
 * `uplinks` that carry no admission decision, and what it gets back. The runtime implements
 * UndecidedUplinks; the pipeline is its UplinkSink.
 */
import type { EventPlace } from '../../events/OrderedEvents.ts';
import type { UplinkEnvelope } from '../../../schemas/messages.ts';
import type { UplinkOutput } from '../admission/processUplink.ts';

/** One record of topic `uplinks`: its envelope, and where it sits on the log (to finish it there). */
export interface UplinkWork {
  envelope: UplinkEnvelope;
  partition: number;
  offset: number;
  /** Its place in the order of topic `events` (taken when read, in offset order), while that topic is written. */
  events?: EventPlace;
}

/** Receives the outcome of every uplink (rows to store, rejections to dead-letter). */
export interface UplinkSink {
  emit(work: UplinkWork, out: UplinkOutput): void;
}

/**
 * Admits records without a decision (appended by an application, or written before the edges
 * decided) in each device's order, as an edge would (admission/admitUplink.ts), and emits them.
 */
export interface UndecidedUplinks {
  /**
   * Takes a record of a device. Returns undefined when taken, or a promise to await when the
   * device's queue is full (the caller stops reading that partition until it resolves).
   */
  dispatch(work: UplinkWork): Promise<void> | undefined;
  /** True while records of this device wait: a record with a decision then queues behind them. */
  holds(deviceId: string): boolean;
  /** Devices held now, and created and passivated since start. */
  readonly size: number;
  readonly created: number;
  readonly passivated: number;
  stop(): void;
}
