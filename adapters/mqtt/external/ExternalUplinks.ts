/**
 * The uplinks external broker mode takes from its shared subscriptions: the topic is trusted (the
 * broker authenticated the publisher), the device and asset looked up, the payload checked as the
 * embedded edge checks it, then the one admission step appends durably. A refusal decided here is
 * recorded as admission records its own; what fails retriably (log or registry unavailable) is tried
 * again with a backoff while its acknowledgement is held (DurableAcks.ts), which holds the broker back.
 */
import type { IPublishPacket } from 'mqtt';
import { parseUplinkTopic, routeTrustedUplink, shorten, type Refusal, uplinkContentType } from '../../../engine/access/mqttTopics.ts';
import type { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { Clock } from '../../../engine/kernel/clock.ts';
import { toFleetError } from '../../../engine/kernel/errors.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { UplinkAdmissionPort } from '../../../engine/ports/uplinkAdmission.ts';
import type { DurableAcks } from './DurableAcks.ts';

export interface UplinkCounts {
  accepted: number;
  refused: number;
  /** Given up: failed for good, or in hand at close. */
  dropped: number;
}

export interface ExternalUplinksOptions {
  access: RegistryLookups;
  admission: UplinkAdmissionPort;
  clock: Clock;
  logger: Logger;
  /** Counted here. */
  counts: UplinkCounts;
  maxPayloadBytes: number;
  maxQos0InFlight: number;
  retryBaseMs: number;
}

export class ExternalUplinks {
  readonly #o: ExternalUplinksOptions;
  readonly #inFlight = new Set<Promise<void>>();
  #qos0InFlight = 0;
  /** Set at close: QoS 0 uplinks are no longer taken, and one that fails is not tried again. */
  closing = false;

  constructor(options: ExternalUplinksOptions) {
    this.#o = options;
  }

  /** mqtt.js's handleMessage: `callback` lets the client read the next message. */
  onMessage(acks: DurableAcks, packet: IPublishPacket, callback: () => void): void {
    if (this.closing && packet.qos === 0) return callback();
    const work = this.#track(this.#handle(packet));
    if (packet.qos !== 0) return acks.hold(packet, work, callback);
    if (this.#qos0InFlight < this.#o.maxQos0InFlight) {
      // Nothing to acknowledge: take the next message while this one is appended.
      this.#qos0InFlight++;
      work.finally(() => this.#qos0InFlight--);
      callback();
      return;
    }
    work.then(() => callback(), () => callback());
  }

  /** Resolves once every uplink in hand is settled (appended, refused or dropped). */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #track(work: Promise<void>): Promise<void> {
    this.#inFlight.add(work);
    return work.finally(() => this.#inFlight.delete(work));
  }

  /** Retries what failed retriably (log or registry unavailable), holding the acknowledgement back. */
  async #handle(packet: IPublishPacket): Promise<void> {
    const { logger, clock, counts } = this.#o;
    let delay = this.#o.retryBaseMs;
    for (;;) {
      try {
        await this.#ingest(packet);
        return;
      } catch (error) {
        const failure = toFleetError(error, 'UNAVAILABLE');
        if (!failure.retriable || this.closing) {
          counts.dropped++;
          logger.error('mqtt: uplink dropped', { topic: shorten(packet.topic), code: failure.code, error: failure });
          return;
        }
        logger.warn('mqtt: uplink not accepted yet; retrying', { topic: shorten(packet.topic), code: failure.code, retryInMs: delay });
        await new Promise<void>((resolve) => clock.setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /** One uplink: route, check, append. Throws only what may pass if tried again. */
  async #ingest(packet: IPublishPacket): Promise<void> {
    const { access, admission, logger, counts } = this.#o;
    const topic = packet.topic;
    const parsed = parseUplinkTopic(topic);
    if (parsed === undefined) {
      // Not one of our filters' shapes (a broker bug or a `+` level holding a wildcard character).
      await this.#record('', { ok: false, code: 'FORBIDDEN', reason: `topic "${shorten(topic)}" is not an uplink topic` });
      return;
    }
    const named = parsed.kind === 'assetState' ? '' : parsed.deviceId;
    let device = parsed.kind === 'assetState' ? await access.deviceOfAsset(parsed.assetId) : await access.device(parsed.deviceId);
    let decision = routeTrustedUplink(parsed, device);
    if (!decision.ok && decision.code === 'UNKNOWN_ASSET' && device !== undefined) {
      // The asset may have been created after the cached copy was read.
      device = await access.device(device.id, true);
      decision = routeTrustedUplink(parsed, device);
    }
    if (!decision.ok) {
      await this.#record(device?.id ?? named, decision, parsed.kind === 'deviceAssetState' ? parsed.asset : '');
      return;
    }
    const target = decision.value;
    const body = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const format = uplinkContentType(target, body, this.#o.maxPayloadBytes, packet.properties?.contentType);
    if (!format.ok) {
      await this.#record(target.deviceId, format, target.asset ?? '');
      return;
    }
    const outcome = await admission.admit(device!, { channel: 'mqtt', contentType: format.value, deviceId: target.deviceId, asset: target.asset, body: new Uint8Array(body) });
    if (outcome.status === 'refused') {
      counts.refused++;
      logger.warn('mqtt: uplink refused', { deviceId: target.deviceId, code: outcome.rejections[0].code, reason: outcome.rejections[0].reason });
      return;
    }
    counts.accepted++;
  }

  /** A refusal the channel decided itself, recorded as admission records its own. */
  async #record(deviceId: string, refusal: Refusal, asset = ''): Promise<void> {
    const { admission, logger } = this.#o;
    this.#o.counts.refused++;
    logger.warn('mqtt: uplink refused', { deviceId, code: refusal.code, reason: refusal.reason });
    const submission = { channel: 'mqtt' as const, contentType: 'json' as const, deviceId, body: new Uint8Array(0) };
    await admission.refuse(submission, asset === '' ? { code: refusal.code, reason: refusal.reason } : { code: refusal.code, reason: refusal.reason, asset })
      .catch((error: unknown) => logger.error('mqtt: recording a refusal failed', { error: toFleetError(error) }));
  }
}
