/**
 * The uplink envelope through cbor-x and the schema, as engine/uplink/envelope.ts encoded and decoded
 * it before the hand-written writer and reader were its only path: the reference
 * test/engine/uplink/envelope.test.ts holds engine/uplink/envelopeWriter.ts (the same bytes) and
 * engine/uplink/envelopeReader.ts (the same envelope, or a refusal) to.
 */
import { createRequire } from 'node:module';
import { Encoder } from 'cbor-x';
import { Compile } from 'typebox/compile';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { checkJsonValue } from '../../../engine/kernel/checkJsonValue.ts';
import { UplinkEnvelope, type AdmittedUplink, type NetworkMeta } from '../../../schemas/messages.ts';

const codec = new Encoder({
  useRecords: false,
  structuredClone: false,
  pack: false,
  bundleStrings: false,
  tagUint8Array: false,
  mapsAsObjects: true,
  variableMapSize: true,
  copyBuffers: false,
  int64AsNumber: true,
} as ConstructorParameters<typeof Encoder>[0]);

/**
 * cbor-x with its JavaScript string reader: its CommonJS build, a module of its own, loaded without
 * the native extractor (cbor-extract), which refuses a text string with an 8-byte head once it has
 * extracted others (and the JavaScript reader drops a leading BOM from text over 64 bytes).
 */
function jsOnly(): typeof import('cbor-x') {
  const saved = process.env.CBOR_NATIVE_ACCELERATION_DISABLED;
  process.env.CBOR_NATIVE_ACCELERATION_DISABLED = 'true';
  try {
    return createRequire(import.meta.url)('cbor-x');
  } finally {
    if (saved === undefined) delete process.env.CBOR_NATIVE_ACCELERATION_DISABLED;
    else process.env.CBOR_NATIVE_ACCELERATION_DISABLED = saved;
  }
}
const codecJs = new (jsOnly().Encoder)({ useRecords: false, mapsAsObjects: true, copyBuffers: false, int64AsNumber: true } as ConstructorParameters<typeof Encoder>[0]);

const checkEnvelope = Compile(UplinkEnvelope);

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

function wireEnvelope(e: UplinkEnvelope): Record<string, unknown> {
  const out: Record<string, unknown> = { id: e.id, channel: e.channel, contentType: e.contentType, deviceId: e.deviceId };
  if (e.asset !== undefined) out.asset = e.asset;
  if (e.network !== undefined) out.network = wireNetwork(e.network);
  out.receivedAt = wireInt(e.receivedAt);
  out.body = e.body;
  if (e.admitted !== undefined) {
    out.admitted = { states: e.admitted.states.map(([asset, ts, value]) => [asset, wireInt(ts), value]), dropped: e.admitted.dropped };
  }
  return out;
}

export function encodeEnvelopeCborX(e: UplinkEnvelope): Uint8Array {
  try {
    const b = codec.encode(wireEnvelope(e));
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } catch (error) {
    throw new FleetError('INTERNAL', `cannot encode uplink envelope: ${(error as Error).message}`, { cause: error });
  }
}

function readAdmitted(raw: Record<string, unknown>): AdmittedUplink {
  const states = raw.states as AdmittedUplink['states'];
  for (let i = 0; i < states.length; i++) {
    const [, ts, value] = states[i];
    if (!Number.isSafeInteger(ts)) throw new FleetError('MALFORMED_PAYLOAD', `uplink envelope: /admitted/states/${i} ts must be epoch ms`);
    const problem = checkJsonValue(value, 0);
    if (problem !== undefined) throw new FleetError('MALFORMED_PAYLOAD', `uplink envelope: /admitted/states/${i} ${problem.reason}`);
  }
  return { states, dropped: raw.dropped as AdmittedUplink['dropped'] };
}

function readNetwork(raw: Record<string, unknown>): NetworkMeta {
  const out: NetworkMeta = { networkId: raw.networkId as string };
  if (raw.devEui !== undefined) out.devEui = raw.devEui as string;
  if (raw.fPort !== undefined) out.fPort = raw.fPort as number;
  if (raw.receivedAt !== undefined) out.receivedAt = raw.receivedAt as number;
  if (raw.format !== undefined) out.format = raw.format as string;
  return out;
}

/** The envelope as cbor-x (with its native string extractor, as the engine ran it) and the schema read it. */
export function decodeEnvelopeCborX(bytes: Uint8Array): UplinkEnvelope {
  return decodeWith(codec, bytes);
}

/** The same with cbor-x's JavaScript string reader. */
export function decodeEnvelopeCborXJs(bytes: Uint8Array): UplinkEnvelope {
  return decodeWith(codecJs, bytes);
}

function decodeWith(decoder: { decode(b: Uint8Array): unknown }, bytes: Uint8Array): UplinkEnvelope {
  if (!(bytes instanceof Uint8Array)) throw new FleetError('MALFORMED_PAYLOAD', 'uplink envelope must be bytes');
  let raw: unknown;
  try {
    raw = decoder.decode(bytes);
  } catch (error) {
    throw new FleetError('MALFORMED_PAYLOAD', `uplink envelope is not valid CBOR: ${(error as Error).message}`, { cause: error });
  }
  if (!checkEnvelope.Check(raw)) {
    const e = checkEnvelope.Errors(raw)[0];
    throw new FleetError('MALFORMED_PAYLOAD', `uplink envelope: ${e === undefined ? 'does not match the schema' : `${e.instancePath || '/'} ${e.message}`}`);
  }
  const r = raw as Record<string, unknown>;
  if (!(r.body instanceof Uint8Array)) throw new FleetError('MALFORMED_PAYLOAD', 'uplink envelope: /body must be a byte string');
  if (!Number.isSafeInteger(r.receivedAt)) throw new FleetError('MALFORMED_PAYLOAD', 'uplink envelope: /receivedAt must be epoch ms');
  const out: UplinkEnvelope = {
    id: r.id as string,
    channel: r.channel as UplinkEnvelope['channel'],
    contentType: r.contentType as UplinkEnvelope['contentType'],
    deviceId: r.deviceId as string,
    receivedAt: r.receivedAt as number,
    body: new Uint8Array(r.body),
  };
  if (r.asset !== undefined) out.asset = r.asset as string;
  if (r.network !== undefined) out.network = readNetwork(r.network as Record<string, unknown>);
  if (r.admitted !== undefined) out.admitted = readAdmitted(r.admitted as Record<string, unknown>);
  return out;
}
