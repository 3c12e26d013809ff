/**
 * CBOR codec of the log messages a third party may read: uplink envelopes (topic `uplinks`) and
 * dead letters (topic `dead-letters`), DESIGN.md §3.
 *
 * Plain RFC 8949 only: maps with text keys, the body as a byte string (major type 2, no typed-array
 * tag), integers as integers (epoch-ms times are written as 64-bit unsigned ints, never as floats),
 * no cbor-x records, structured clone, packing or bundled strings. Any CBOR library can read them.
 *
 * Envelopes, one per uplink, are written and read by hand (envelopeWriter.ts, envelopeReader.ts);
 * dead letters, rare and off the hot path, go through cbor-x and the schema, envelope included.
 */
import { Encoder } from 'cbor-x';
import { Compile } from 'typebox/compile';
import { FleetError } from '../kernel/errors.ts';
import { DeadLetter, UplinkEnvelope, type AdmittedUplink, type NetworkMeta } from '../../schemas/messages.ts';
import { checkJsonValue } from '../kernel/checkJsonValue.ts';
import { readEnvelope } from './envelopeReader.ts';
import { writeEnvelope } from './envelopeWriter.ts';

const codec = new Encoder({
  useRecords: false,
  structuredClone: false,
  pack: false,
  bundleStrings: false,
  tagUint8Array: false,
  mapsAsObjects: true,
  // Preferred (shortest) map headers instead of cbor-x's fixed 16-bit ones.
  variableMapSize: true,
  // Byte strings come back as views of the input; we copy the body once ourselves.
  copyBuffers: false,
  // Decoder option (missing from cbor-x's typings): 64-bit ints as numbers, not bigints.
  int64AsNumber: true,
} as ConstructorParameters<typeof Encoder>[0]);

const checkEnvelope = Compile(UplinkEnvelope);
const checkDeadLetter = Compile(DeadLetter);

/** cbor-x writes numbers beyond 32 bits as float64; a bigint makes it write a CBOR integer. */
function wireInt(n: number): number | bigint {
  return n > 0xffffffff || n < -0xffffffff ? BigInt(n) : n;
}

function wireNetwork(n: NetworkMeta): Record<string, unknown> {
  const out: Record<string, unknown> = { networkId: n.networkId };
  if (n.devEui !== undefined) out.devEui = n.devEui;
  if (n.fPort !== undefined) out.fPort = n.fPort;
  if (n.receivedAt !== undefined) out.receivedAt = wireInt(n.receivedAt);
  if (n.format !== undefined) out.format = n.format;
  return out;
}

/**
 * A dead letter's envelope: only the schema's fields, in a fixed order, without undefined members.
 * A dead letter is about the uplink as received; what admission carried for the store stays out.
 */
function wireDeadLetterEnvelope(e: UplinkEnvelope): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: e.id,
    channel: e.channel,
    contentType: e.contentType,
    deviceId: e.deviceId,
  };
  if (e.asset !== undefined) out.asset = e.asset;
  if (e.network !== undefined) out.network = wireNetwork(e.network);
  out.receivedAt = wireInt(e.receivedAt);
  out.body = e.body;
  return out;
}

/**
 * The admitted states as stored values: a record whose carried state is not a storable JSON value
 * (only a forged or damaged record can hold one: admission refuses them) is malformed as a whole,
 * so it becomes a dead letter instead of poisoning a shared insert.
 */
function readAdmitted(raw: Record<string, unknown>, what: string): AdmittedUplink {
  const states = raw.states as AdmittedUplink['states'];
  for (let i = 0; i < states.length; i++) {
    const [, ts, value] = states[i];
    if (!Number.isSafeInteger(ts)) throw new FleetError('MALFORMED_PAYLOAD', `${what}: /admitted/states/${i} ts must be epoch ms`);
    const problem = checkJsonValue(value, 0);
    if (problem !== undefined) throw new FleetError('MALFORMED_PAYLOAD', `${what}: /admitted/states/${i} ${problem.reason}`);
  }
  return { states, dropped: raw.dropped as AdmittedUplink['dropped'] };
}

function toBytes(buffer: Uint8Array): Uint8Array {
  // cbor-x returns a Node Buffer over its own output block; hand out a plain Uint8Array view.
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function encodeChecked(value: Record<string, unknown>, what: string): Uint8Array {
  try {
    return toBytes(codec.encode(value));
  } catch (error) {
    throw new FleetError('INTERNAL', `cannot encode ${what}: ${(error as Error).message}`, { cause: error });
  }
}

function decodeRaw(bytes: Uint8Array, what: string): unknown {
  if (!(bytes instanceof Uint8Array)) throw new FleetError('MALFORMED_PAYLOAD', `${what} must be bytes`);
  try {
    return codec.decode(bytes);
  } catch (error) {
    throw new FleetError('MALFORMED_PAYLOAD', `${what} is not valid CBOR: ${(error as Error).message}`, { cause: error });
  }
}

function firstError(errors: ReadonlyArray<{ instancePath: string; message: string }>): string {
  const e = errors[0];
  return e === undefined ? 'does not match the schema' : `${e.instancePath || '/'} ${e.message}`;
}

function readNetwork(raw: Record<string, unknown>): NetworkMeta {
  const out: NetworkMeta = { networkId: raw.networkId as string };
  if (raw.devEui !== undefined) out.devEui = raw.devEui as string;
  if (raw.fPort !== undefined) out.fPort = raw.fPort as number;
  if (raw.receivedAt !== undefined) out.receivedAt = raw.receivedAt as number;
  if (raw.format !== undefined) out.format = raw.format as string;
  return out;
}

/** Validates a dead letter's decoded envelope map and rebuilds it with only the schema's fields. */
function readDeadLetterEnvelope(raw: unknown, what: string): UplinkEnvelope {
  if (!checkEnvelope.Check(raw)) {
    throw new FleetError('MALFORMED_PAYLOAD', `${what}: ${firstError(checkEnvelope.Errors(raw))}`);
  }
  const r = raw as Record<string, unknown>;
  if (!(r.body instanceof Uint8Array)) throw new FleetError('MALFORMED_PAYLOAD', `${what}: /body must be a byte string`);
  if (!Number.isSafeInteger(r.receivedAt)) throw new FleetError('MALFORMED_PAYLOAD', `${what}: /receivedAt must be epoch ms`);
  const out: UplinkEnvelope = {
    id: r.id as string,
    channel: r.channel as UplinkEnvelope['channel'],
    contentType: r.contentType as UplinkEnvelope['contentType'],
    deviceId: r.deviceId as string,
    receivedAt: r.receivedAt as number,
    // A copy: the decoded byte string is a view into `bytes`, which the log may reuse.
    body: new Uint8Array(r.body),
  };
  if (r.asset !== undefined) out.asset = r.asset as string;
  if (r.network !== undefined) out.network = readNetwork(r.network as Record<string, unknown>);
  if (r.admitted !== undefined) out.admitted = readAdmitted(r.admitted as Record<string, unknown>, what);
  return out;
}

/** The envelope's CBOR (envelopeWriter.ts); throws FleetError('INTERNAL') on what it cannot hold. */
export function encodeEnvelope(e: UplinkEnvelope): Uint8Array {
  return writeEnvelope(e);
}

/** Throws FleetError('MALFORMED_PAYLOAD') on anything that is not a well-formed envelope (envelopeReader.ts). */
export function decodeEnvelope(bytes: Uint8Array): UplinkEnvelope {
  return readEnvelope(bytes);
}

export function encodeDeadLetter(d: DeadLetter): Uint8Array {
  const out: Record<string, unknown> = { code: d.code, reason: d.reason };
  if (d.asset !== undefined) out.asset = d.asset;
  if (d.item !== undefined) out.item = d.item;
  out.rejectedAt = wireInt(d.rejectedAt);
  out.envelope = wireDeadLetterEnvelope(d.envelope);
  return encodeChecked(out, 'dead letter');
}

/** Throws FleetError('MALFORMED_PAYLOAD') on anything that is not a well-formed dead letter. */
export function decodeDeadLetter(bytes: Uint8Array): DeadLetter {
  const raw = decodeRaw(bytes, 'dead letter');
  if (!checkDeadLetter.Check(raw)) {
    throw new FleetError('MALFORMED_PAYLOAD', `dead letter: ${firstError(checkDeadLetter.Errors(raw))}`);
  }
  const r = raw as Record<string, unknown>;
  if (!Number.isSafeInteger(r.rejectedAt)) throw new FleetError('MALFORMED_PAYLOAD', 'dead letter: /rejectedAt must be epoch ms');
  const out: DeadLetter = {
    code: r.code as string,
    reason: r.reason as string,
    rejectedAt: r.rejectedAt as number,
    envelope: readDeadLetterEnvelope(r.envelope, 'dead letter envelope'),
  };
  if (r.asset !== undefined) out.asset = r.asset as string;
  if (r.item !== undefined) out.item = r.item as number;
  return out;
}
