/**
 * Where LPWAN webhooks hand uplinks to the engine (DESIGN.md §2): the device is resolved by its
 * network binding (network + devEui, set at activation), and the FRMPayload is appended to topic
 * `uplinks` as the device's uplink, with the network's receive time and FPort, so the device actor
 * decodes it with its device type's format (binary script, Cayenne LPP, CBOR) and times the states
 * with the network's receive time (engine/uplink/admission/processUplink.ts).
 *
 * What can never succeed is not refused with an error the network server would retry or count
 * against the webhook: it becomes a dead letter (topic `dead-letters`) and the answer says
 * `dropped` with the code —
 *   UNKNOWN_DEVICE      no device is bound to that devEui on this network, or it is bound in
 *                       another application (its dead letter has device id "");
 *   MALFORMED_PAYLOAD   the payload field is not valid base64/hex, or is missing (encrypted only).
 * Decoding errors (DECODE_FAILED) surface later, in the device actor, as the device's rejections.
 * Registry or log trouble is thrown as it is (retriable: UNAVAILABLE, BACKPRESSURE → 503).
 */
import type { Clock } from '../kernel/clock.ts';
import type { ErrorCode } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import type { LpwanApplication, LpwanNetworkId } from '../ports/lpwanApplications.ts';
import type { Device, Registry } from '../ports/registry.ts';
import type { UplinkReceipt, UplinkSubmission } from '../uplink/UplinkIngest.ts';
import type { Rejection } from '../uplink/admission/processUplink.ts';
import type { ContentType, UplinkEnvelope } from '../../schemas/messages.ts';
import type { LpwanUplinkAnswer } from '../../schemas/lpwan.ts';

/** Why a payload field could not be read. */
export interface PayloadProblem {
  code: ErrorCode;
  reason: string;
}

/** An uplink as a network-server adapter read it. */
export interface LpwanUplink {
  networkId: LpwanNetworkId;
  /** 16 hex digits, any case. */
  devEui: string;
  fPort?: number;
  /** The network's receive time, epoch ms. */
  receivedAt?: number;
  /** The FRMPayload, or why it could not be read. */
  payload: Uint8Array | PayloadProblem;
}

export interface LpwanUplinkIntakeOptions {
  devices: Pick<Registry, 'findDeviceByNetwork'>;
  /** engine/uplink/UplinkIngest.ts: resolves once the uplink is durable in the log. */
  ingest: { append(submission: UplinkSubmission): Promise<UplinkReceipt | void> };
  /** engine/uplink/pipeline/DeadLetterSink.ts: resolves once the dead letters are durable. */
  deadLetters: { add(envelope: UplinkEnvelope, rejections: readonly Rejection[]): Promise<void> };
  clock: Clock;
  /**
   * How long a devEui's device (or its absence) is reused before the registry is asked again, ms.
   * Default 2000; 0 disables. A device activated or deleted meanwhile is seen within this time.
   */
  cacheTtlMs?: number;
  /** Bindings cached at most. Default 10 000. */
  maxCached?: number;
}

interface Cached {
  device: Device | undefined;
  expires: number;
}

/** The uplink's content type for the device's payload format; no format: CBOR (spec §1, constrained networks). */
function contentTypeOf(device: Device): ContentType {
  switch (device.payload?.format) {
    case 'binary':
    case 'cayenne':
      return 'binary';
    case 'json':
      return 'json';
    default:
      return 'cbor';
  }
}

export function normaliseDevEui(devEui: string): string {
  return devEui.replace(/[-:]/g, '').toUpperCase();
}

export class LpwanUplinkIntake {
  readonly #options: LpwanUplinkIntakeOptions;
  readonly #ttl: number;
  readonly #maxCached: number;
  readonly #cache = new Map<string, Cached>();

  constructor(options: LpwanUplinkIntakeOptions) {
    this.#options = options;
    this.#ttl = options.cacheTtlMs ?? 2000;
    this.#maxCached = options.maxCached ?? 10_000;
  }

  /** Appends the uplink, or records why it can never be stored. Throws only what a retry may cure. */
  async accept(app: LpwanApplication, uplink: LpwanUplink): Promise<LpwanUplinkAnswer> {
    const devEui = normaliseDevEui(uplink.devEui);
    const device = await this.#device(uplink.networkId, devEui);
    const network = {
      networkId: uplink.networkId,
      devEui,
      ...(uplink.fPort === undefined ? {} : { fPort: uplink.fPort }),
      ...(uplink.receivedAt === undefined ? {} : { receivedAt: uplink.receivedAt }),
    };
    const boundApp = device?.network?.data.applicationId;
    if (device === undefined || (typeof boundApp === 'string' && boundApp !== app.applicationId)) {
      const reason = device === undefined
        ? `no device is bound to devEui ${devEui} on ${uplink.networkId}`
        : `devEui ${devEui} is bound in ${uplink.networkId} application ${boundApp}, not ${app.applicationId}`;
      return this.#drop('', network, uplink.payload, 'UNKNOWN_DEVICE', reason);
    }
    const format = device.payload?.format;
    const meta = format === undefined ? network : { ...network, format };
    if (!(uplink.payload instanceof Uint8Array)) {
      return this.#drop(device.id, meta, uplink.payload, uplink.payload.code, uplink.payload.reason);
    }
    const receipt = await this.#options.ingest.append({
      channel: 'lpwan',
      contentType: contentTypeOf(device),
      deviceId: device.id,
      network: meta,
      body: uplink.payload,
    });
    return receipt ? { status: 'accepted', deviceId: device.id, uplinkId: receipt.id } : { status: 'accepted', deviceId: device.id };
  }

  async #drop(
    deviceId: string, network: UplinkEnvelope['network'], payload: Uint8Array | PayloadProblem, code: ErrorCode, reason: string,
  ): Promise<LpwanUplinkAnswer> {
    const envelope: UplinkEnvelope = {
      id: newId(),
      channel: 'lpwan',
      contentType: 'binary',
      deviceId,
      network,
      receivedAt: this.#options.clock.now(),
      body: payload instanceof Uint8Array ? payload : new Uint8Array(0),
    };
    await this.#options.deadLetters.add(envelope, [{ code, reason }]);
    return deviceId === ''
      ? { status: 'dropped', code, reason }
      : { status: 'dropped', deviceId, uplinkId: envelope.id, code, reason };
  }

  async #device(networkId: string, devEui: string): Promise<Device | undefined> {
    const key = `${networkId}\n${devEui}`;
    const now = this.#options.clock.now();
    const hit = this.#cache.get(key);
    if (hit !== undefined) {
      this.#cache.delete(key);
      if (hit.expires > now) {
        this.#cache.set(key, hit);
        return hit.device;
      }
    }
    const device = await this.#options.devices.findDeviceByNetwork(networkId, devEui);
    if (this.#ttl > 0) {
      this.#cache.set(key, { device, expires: now + this.#ttl });
      if (this.#cache.size > this.#maxCached) this.#cache.delete(this.#cache.keys().next().value!);
    }
    return device;
  }
}
