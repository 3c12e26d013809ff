/**
 * Where LPWAN webhooks hand uplinks to the engine (DESIGN.md §2): the device is resolved by its
 * network binding (network + devEui, set at activation), and the FRMPayload goes through the one
 * admission step (engine/uplink/UplinkAdmission.ts) as the device's uplink, with the network's
 * receive time and FPort, decoded with its device type's format (binary script, Cayenne LPP, CBOR)
 * and timed with the network's receive time (engine/uplink/admission/processUplink.ts).
 *
 * What can never succeed is not refused with an error the network server would retry or count
 * against the webhook: it is recorded as a refusal (topic `dead-letters`, the device's rejections)
 * and the answer says `dropped` with the code —
 *   UNKNOWN_DEVICE      no device is bound to that devEui on this network, or it is bound in
 *                       another application (its dead letter has device id "");
 *   MALFORMED_PAYLOAD   the payload field is not valid base64/hex, or is missing (encrypted only);
 *   DECODE_FAILED, …    admission refused the payload (the code it gave).
 * Registry or log trouble is thrown as it is (retriable: UNAVAILABLE, BACKPRESSURE → 503).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../kernel/clock.ts';
import { DEFAULT_AT_WINDOW, type AtWindow } from '../uplink/admission/compileDevice.ts';
import type { ErrorCode } from '../kernel/errors.ts';
import type { LpwanApplication, LpwanNetworkId } from '../ports/lpwanApplications.ts';
import type { DeviceWithAssets, Registry } from '../ports/registry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import type { AdmissionOutcome, UplinkAdmissionPort } from '../ports/uplinkAdmission.ts';
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
  /**
   * The network's identity of this message (e.g. FCnt and the network receive time), the same in
   * every delivery of it: the uplink id is derived from it, so a repeated delivery folds into the
   * states already stored, as a replay does. Absent: the uplink gets a fresh id.
   */
  messageKey?: string;
}

export interface LpwanUplinkIntakeOptions {
  devices: Pick<Registry, 'findDeviceByNetwork' | 'getDevice'>;
  /** The engine's admission step: decides what the payload yields, records refusals, appends. */
  admission: UplinkAdmissionPort;
  clock: Clock;
  /**
   * How long a devEui's device (or its absence) is reused before the registry is asked again, ms.
   * Default 2000; 0 disables. A device activated, changed or deleted meanwhile is seen within this
   * time, or at once when the change reaches apply().
   */
  cacheTtlMs?: number;
  /** Bindings cached at most. Default 10 000. */
  maxCached?: number;
  /**
   * How long the answer to a message (by its uplink id) is kept, ms: a repeated delivery within it
   * gets that answer (`repeated: true`) without being admitted or recorded again. Default 600 000
   * (network servers retry within minutes); 0 disables. Past it, a repeated delivery is admitted
   * again and its states still fold in the store.
   */
  answerTtlMs?: number;
  /** Answers kept at most. Default 10 000. */
  maxAnswers?: number;
  /**
   * Admission's `at` window (compileDevice.ts), default DEFAULT_AT_WINDOW: a network receive time
   * inside it becomes the receive time of a message with an identity (see accept).
   */
  atWindow?: AtWindow;
}

interface Cached {
  device: DeviceWithAssets | undefined;
  expires: number;
}

/** The uplink's content type for the device's payload format; no format: CBOR (spec §1, constrained networks). */
function contentTypeOf(device: DeviceWithAssets): ContentType {
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

/**
 * The uplink id of a network message: 22 base62 characters (the shape of every id) from a SHA-256
 * of the network, the devEui and the network's message key. Deterministic, so every delivery of the
 * message — to this edge or another, before or after a restart — carries the same id.
 */
export function lpwanUplinkId(networkId: string, devEui: string, messageKey: string): string {
  const digest = createHash('sha256').update(`fleetstream-lpwan-uplink\n${networkId}\n${devEui}\n${messageKey}`).digest();
  let n = digest.readBigUInt64BE(0) << 64n | digest.readBigUInt64BE(8);
  let out = '';
  for (let i = 0; i < 22; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The uplink id and (when the network's is usable) receive time of a message with an identity. */
interface Identity {
  id: string;
  receivedAt: number | undefined;
}

function identityFields(identity: Identity | undefined): { id?: string; receivedAt?: number } {
  if (identity === undefined) return {};
  return identity.receivedAt === undefined ? { id: identity.id } : { id: identity.id, receivedAt: identity.receivedAt };
}

interface KeptAnswer {
  answer: Promise<LpwanUplinkAnswer>;
  expires: number;
}

export class LpwanUplinkIntake {
  readonly #options: LpwanUplinkIntakeOptions;
  readonly #ttl: number;
  readonly #maxCached: number;
  readonly #cache = new Map<string, Cached>();
  readonly #answers = new Map<string, KeptAnswer>();
  readonly #answerTtl: number;
  readonly #maxAnswers: number;
  readonly #window: Readonly<AtWindow>;
  /** Counts the changes apply() acted on: a lookup that overlapped one does not cache its answer. */
  #generation = 0;

  constructor(options: LpwanUplinkIntakeOptions) {
    this.#options = options;
    this.#ttl = options.cacheTtlMs ?? 2000;
    this.#maxCached = options.maxCached ?? 10_000;
    this.#answerTtl = options.answerTtlMs ?? 600_000;
    this.#maxAnswers = options.maxAnswers ?? 10_000;
    this.#window = options.atWindow ?? DEFAULT_AT_WINDOW;
  }

  /**
   * Appends the uplink, or records why it can never be stored. Throws only what a retry may cure.
   * A message delivered again (same messageKey) gets the first delivery's answer, marked
   * `repeated`; one that arrives while the first is still being admitted waits for it.
   *
   * A message with an identity is also received "at" the network's receive time, not at this
   * edge's clock: every delivery of it then carries the same uplink id *and* the same receive time,
   * the two things a replayed uplink has in common, so a store that keys rows by either folds it.
   * A network time outside admission's window keeps this edge's clock, and admission refuses the
   * message as INVALID_AT.
   */
  async accept(app: LpwanApplication, uplink: LpwanUplink): Promise<LpwanUplinkAnswer> {
    const devEui = normaliseDevEui(uplink.devEui);
    if (uplink.messageKey === undefined) return this.#accept(app, uplink, devEui, undefined);
    const id = lpwanUplinkId(uplink.networkId, devEui, `${app.applicationId}\n${uplink.messageKey}`);
    const now = this.#options.clock.now();
    const networkTime = uplink.receivedAt;
    const receivedAt = networkTime !== undefined && networkTime <= now + this.#window.maxAheadMs && networkTime >= this.#window.minAt ? networkTime : undefined;
    const identity = { id, receivedAt };
    if (this.#answerTtl <= 0) return this.#accept(app, uplink, devEui, identity);
    const kept = this.#answers.get(id);
    if (kept !== undefined && kept.expires > now) return { ...(await kept.answer), repeated: true };
    const answer = this.#accept(app, uplink, devEui, identity);
    this.#answers.delete(id);
    this.#answers.set(id, { answer, expires: now + this.#answerTtl });
    if (this.#answers.size > this.#maxAnswers) this.#answers.delete(this.#answers.keys().next().value!);
    // What failed (503: registry or log away) is not an answer: the retry must run again.
    answer.catch(() => {
      if (this.#answers.get(id)?.answer === answer) this.#answers.delete(id);
    });
    return answer;
  }

  async #accept(app: LpwanApplication, uplink: LpwanUplink, devEui: string, identity: Identity | undefined): Promise<LpwanUplinkAnswer> {
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
      return this.#drop('', network, uplink.payload, 'UNKNOWN_DEVICE', reason, identity);
    }
    const format = device.payload?.format;
    const meta = format === undefined ? network : { ...network, format };
    if (!(uplink.payload instanceof Uint8Array)) {
      return this.#drop(device.id, meta, uplink.payload, uplink.payload.code, uplink.payload.reason, identity);
    }
    const outcome = await this.#options.admission.admit(device, {
      ...identityFields(identity),
      channel: 'lpwan',
      contentType: contentTypeOf(device),
      deviceId: device.id,
      network: meta,
      body: uplink.payload,
    });
    return answer(device.id, outcome);
  }

  async #drop(
    deviceId: string, network: UplinkEnvelope['network'], payload: Uint8Array | PayloadProblem, code: ErrorCode, reason: string, identity: Identity | undefined,
  ): Promise<LpwanUplinkAnswer> {
    const body = payload instanceof Uint8Array ? payload : new Uint8Array(0);
    const outcome = await this.#options.admission.refuse({ ...identityFields(identity), channel: 'lpwan', contentType: 'binary', deviceId, network, body }, { code, reason });
    return answer(deviceId, outcome);
  }

  /**
   * A registry change (engine/ports/registryChanges.ts): a changed or deleted device's bindings are
   * looked up again, and so is every devEui cached as unbound (a device may have just been
   * activated with it); `resync` drops everything.
   */
  apply(change: RegistryChange): void {
    if (change.kind === 'resync') {
      this.#cache.clear();
      this.#generation++;
      return;
    }
    if (change.kind !== 'device-changed' && change.kind !== 'device-deleted') return;
    for (const [key, cached] of this.#cache) {
      if (cached.device === undefined || cached.device.id === change.deviceId) this.#cache.delete(key);
    }
    this.#generation++;
  }

  async #device(networkId: string, devEui: string): Promise<DeviceWithAssets | undefined> {
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
    const generation = this.#generation;
    const bound = await this.#options.devices.findDeviceByNetwork(networkId, devEui);
    const device = bound === undefined ? undefined : await this.#options.devices.getDevice(bound.id);
    if (this.#ttl > 0 && generation === this.#generation) {
      this.#cache.set(key, { device, expires: now + this.#ttl });
      if (this.#cache.size > this.#maxCached) this.#cache.delete(this.#cache.keys().next().value!);
    }
    return device;
  }
}

/** The webhook's answer; a device-less refusal names no device or uplink. */
function answer(deviceId: string, outcome: AdmissionOutcome): LpwanUplinkAnswer {
  if (outcome.status === 'accepted') return { status: 'accepted', deviceId, uplinkId: outcome.uplinkId };
  const { code, reason } = outcome.rejections[0];
  return deviceId === '' ? { status: 'dropped', code, reason } : { status: 'dropped', deviceId, uplinkId: outcome.uplinkId, code, reason };
}
