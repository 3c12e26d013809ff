/**
 * The device actor's hot path (DESIGN.md §3–4): one uplink envelope in, state rows and rejections
 * out. Pure: no I/O, no clock (times come from the envelope), never throws.
 *
 * Wire forms (spec §2.1–2.2):
 * - json + envelope.asset: asset state `{"value": …, "at"?: …}`. Other keys are ignored.
 * - json without asset: device state `{"<asset>": {"value": …, "at"?: …}, …}`; an entry that is not
 *   such an object is rejected for that asset. `{}` yields nothing.
 * - cbor: a map asset name → entry, or one entry when envelope.asset is set. Each entry is, by shape:
 *     tag 120 (AllThingsTalk IoT data point): 120(v), or 120([v, time?, location?]) with time a tag
 *       0 / 1 / 1001 time (or a plain date-time string) or null, and location tag 103
 *       ([lat, lon, elevation?, uncertainty?]) or null. The location is checked and then dropped:
 *       a state row has no place for it (send it as a location asset to keep it).
 *     full form: a map whose keys are exactly "value", or "value" and "at".
 *     simplified form: anything else, taken as the bare value.
 *   So a bare value that is itself a map with only a "value" (and "at") key reads as the full
 *   form: `{"v": {"value": 5}}` stores 5 for asset v. To store the object, wrap it:
 *   `{"v": {"value": {"value": 5}}}`. One rule per entry; entries of one map may mix forms.
 * - binary: the device's binary decoder gives asset name → bare value (envelope.asset is ignored).
 *
 * `at` must lie in the device's AtWindow (compileDevice.ts; default not more than a day ahead of the
 * envelope's receivedAt, not before 1970), and so must an LPWAN network's receive time where it
 * stands in for a missing `at`; outside it the state is refused INVALID_AT.
 *
 * `at` (measurement time → row.ts): see parseTimestamp.ts for the accepted ISO 8601 strings
 * (zone-less means UTC). null or absent → the network's receive time when an LPWAN network reported
 * one, else the envelope's receivedAt. Numbers are refused in every form: epoch seconds and epoch
 * milliseconds look alike. CBOR senders can use tag 1 (epoch seconds, int or float, RFC 8949
 * §3.4.2), tag 0 (date-time string) or tag 1001 (RFC 9581, keys 1 and one of -3/-6/-9 only).
 *
 * Batches (an array of device states): items are taken in order, each on its own. Readings without
 * `at` all get the default time (below); they are distinct readings, kept in item order
 * (numberReadings.ts). An item whose asset state repeats an earlier item's asset at the same
 * explicit `at` (by instant: "…:00Z" and tag 1 of the same second are one time) is the same
 * reading sent twice: that asset state is rejected DUPLICATE_READING naming the earlier item, and
 * the first one is stored. A single device state names each asset once (JSON.parse keeps the last
 * of repeated keys; CBOR refuses them), and an LPWAN payload decoded by a binary or Cayenne LPP
 * script is one such map.
 *
 * Rejections: per asset (the others of the same message still yield rows): UNKNOWN_ASSET,
 * INVALID_AT, PROFILE_VIOLATION, DUPLICATE_READING (batches), INVALID_TEXT (a string holds a lone surrogate; strings are stored
 * in NFC, canonicalValue.ts), INVALID_STATE (not a storable JSON value: non-finite or out-of-range
 * number, bigint, byte string, unsupported tag, ...). Whole message (one rejection, no rows):
 * MALFORMED_JSON, MALFORMED_CBOR, INVALID_STATE (wrong top-level shape), TOO_DEEP (more than
 * MAX_JSON_DEPTH nested arrays/objects — and, in CBOR, tags), DECODE_FAILED,
 * UNSUPPORTED_CONTENT_TYPE, PROCESSING_FAILED.
 */
import type { ErrorCode } from '../../kernel/errors.ts';
import type { JsonValue, StateRow, UplinkEnvelope } from '../../../schemas/messages.ts';
import { canonicalValue, needsCanonicalForm } from './canonicalValue.ts';
import { checkJsonValue, MAX_JSON_DEPTH } from '../../kernel/checkJsonValue.ts';
import type { CompiledDevice } from './compileDevice.ts';
import { CborDecodeError, CborMap, CborTag, decodeCbor } from './decodeCbor.ts';
import { isPlainObject } from '../../kernel/isPlainObject.ts';
import { numberReadings } from './numberReadings.ts';
import { BatchReadings } from './BatchReadings.ts';
import { describeAt, iso, outsideWindow, resolveAt } from './stateTime.ts';

/** Device states one batch may hold (a device's buffered readings, sent as one message). */
export const MAX_BATCH_STATES = 1000;

export interface Rejection {
  code: ErrorCode;
  reason: string;
  /** The asset the rejection concerns; absent when it concerns the whole message or a whole batch item. */
  asset?: string;
  /** The batch item (index in the array of device states) the rejection concerns. */
  item?: number;
}

/** Filled by processUplink; the caller owns and reuses the arrays (it only pushes). */
export interface UplinkOutput {
  rows: StateRow[];
  rejections: Rejection[];
}

/** Whole-message rejection raised deep inside; processUplink drops the message's rows for it. */
class Abort {
  readonly rejection: Rejection;
  constructor(code: ErrorCode, reason: string) {
    this.rejection = { code, reason };
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

const TAG_GEO = 103;
const TAG_DATA_POINT = 120;

/** An asset name for a reason text; the rejection's `asset` field keeps it whole. */
function quote(name: string): string {
  return JSON.stringify(name.length > 100 ? `${name.slice(0, 97)}...` : name);
}

function reject(out: UplinkOutput, code: ErrorCode, reason: string, asset?: string): void {
  out.rejections.push(asset === undefined ? { code, reason } : { code, reason, asset });
}

/**
 * One asset state: checks and pushes a row or a rejection. `depth` is how many containers enclose
 * `value` in the body.
 */
function emit(
  env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number,
  name: string, value: unknown, at: unknown, depth: number, cbor: boolean, batch?: BatchReadings,
): void {
  const problem = checkJsonValue(value, depth);
  if (problem !== undefined && problem.code === 'TOO_DEEP') throw new Abort('TOO_DEEP', problem.reason);
  const asset = device.assets.get(name);
  if (asset === undefined) return reject(out, 'UNKNOWN_ASSET', `device ${env.deviceId} has no asset ${quote(name)}`, name);
  if (problem !== undefined) return reject(out, problem.code, problem.reason, name);
  if (needsCanonicalForm(value)) {
    const canonical = canonicalValue(value);
    if (canonical.problem !== undefined) return reject(out, 'INVALID_TEXT', canonical.problem, name);
    value = canonical.value;
  }
  const ts = resolveAt(at, defaultTs, cbor);
  if (Number.isNaN(ts)) return reject(out, 'INVALID_AT', describeAt(at, cbor), name);
  const window = device.atWindow;
  if (ts > env.receivedAt + window.maxAheadMs || ts < window.minAt) {
    return reject(out, 'INVALID_AT', outsideWindow(env, ts, at === undefined || at === null, window), name);
  }
  const violation = asset.check(value);
  if (violation !== undefined) return reject(out, 'PROFILE_VIOLATION', violation, name);
  if (batch !== undefined && at !== undefined && at !== null) {
    const earlier = batch.claim(name, ts);
    if (earlier >= 0) {
      return reject(out, 'DUPLICATE_READING', `item ${earlier} already holds a reading of asset ${quote(name)} at ${iso(ts)}; one reading per asset and time is kept`, name);
    }
  }
  out.rows.push({ deviceId: env.deviceId, asset: name, ts, receivedAt: env.receivedAt, value: value as JsonValue, uplinkId: env.id });
}

/** Ignored members of a JSON asset state still count towards the body's nesting limit. */
function checkIgnoredDepth(state: Record<string, unknown>, depth: number): void {
  for (const key in state) {
    const v = state[key];
    if (key !== 'value' && typeof v === 'object' && v !== null) {
      const problem = checkJsonValue(v, depth, key);
      if (problem !== undefined && problem.code === 'TOO_DEEP') throw new Abort('TOO_DEEP', problem.reason);
    }
  }
}

/** A top-level JSON value of the wrong shape; a too deeply nested one is reported as such. */
function badShape(doc: unknown, reason: string): Abort {
  const problem = checkJsonValue(doc, 0, 'body');
  return problem !== undefined && problem.code === 'TOO_DEEP' ? new Abort('TOO_DEEP', problem.reason) : new Abort('INVALID_STATE', reason);
}

function processJson(env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number): void {
  let doc: unknown;
  try {
    doc = JSON.parse(utf8.decode(env.body));
  } catch (error) {
    if (error instanceof RangeError) throw new Abort('TOO_DEEP', `body nests too deeply to parse (limit ${MAX_JSON_DEPTH} levels)`);
    const why = error instanceof TypeError ? 'is not valid UTF-8' : `is not valid JSON: ${(error as Error).message}`;
    throw new Abort('MALFORMED_JSON', `body ${why}`);
  }
  if (env.asset !== undefined) {
    // spec §2.1 asset state
    if (!isPlainObject(doc)) throw badShape(doc, 'asset state must be a JSON object {"value": …, "at"?: "<ISO 8601>"}');
    checkIgnoredDepth(doc, 1);
    if (!Object.hasOwn(doc, 'value')) throw new Abort('INVALID_STATE', 'asset state has no "value"');
    return emit(env, device, out, defaultTs, env.asset, doc.value, doc.at, 1, false);
  }
  // A batch: an array of device states (readings buffered while offline), each taken on its own.
  if (Array.isArray(doc)) {
    checkBatchSize(doc.length);
    const batch = new BatchReadings();
    for (let i = 0; i < doc.length; i++) {
      const item = doc[i];
      batch.item = i;
      batchItem(out, i, () => {
        if (!isPlainObject(item)) {
          const problem = checkJsonValue(item, 1, `item ${i}`);
          if (problem !== undefined && problem.code === 'TOO_DEEP') throw new Abort('TOO_DEEP', problem.reason);
          return reject(out, 'INVALID_STATE', 'a batch item must be a device state: a JSON object of asset name → {"value": …, "at"?: …}');
        }
        jsonDeviceState(env, device, out, defaultTs, item, 1, batch);
      });
    }
    return;
  }
  // spec §2.2 device state
  if (!isPlainObject(doc)) throw badShape(doc, 'device state must be a JSON object of asset name → {"value": …, "at"?: …}, or an array of them');
  jsonDeviceState(env, device, out, defaultTs, doc, 0);
}

/** One device state object; `depth` is how many containers enclose it (1 inside a batch, where `batch` is set). */
function jsonDeviceState(
  env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number, doc: Record<string, unknown>, depth: number, batch?: BatchReadings,
): void {
  for (const name in doc) {
    const state = doc[name];
    if (isPlainObject(state)) {
      checkIgnoredDepth(state, depth + 2);
      if (Object.hasOwn(state, 'value')) {
        emit(env, device, out, defaultTs, name, state.value, state.at, depth + 2, false, batch);
        continue;
      }
    } else {
      const problem = checkJsonValue(state, depth + 1, name);
      if (problem !== undefined && problem.code === 'TOO_DEEP') throw new Abort('TOO_DEEP', problem.reason);
    }
    reject(out, 'INVALID_STATE', `state of asset ${quote(name)} must be an object with "value" (and optional "at")`, name);
  }
}

function checkBatchSize(length: number): void {
  if (length > MAX_BATCH_STATES) throw new Abort('PAYLOAD_TOO_LARGE', `a batch holds at most ${MAX_BATCH_STATES} device states, not ${length}`);
}

/** Runs one batch item; its rejections name the item, so the rest of the batch still counts. */
function batchItem(out: UplinkOutput, index: number, run: () => void): void {
  const from = out.rejections.length;
  run();
  for (let j = from; j < out.rejections.length; j++) {
    const r = out.rejections[j];
    r.item = index;
    r.reason = `item ${index}: ${r.reason}`;
  }
}

/** Exactly "value", or "value" and "at": the full form (see the module doc for the ambiguity). */
function isFullForm(entry: unknown): entry is Record<string, unknown> {
  if (!isPlainObject(entry)) return false;
  let keys = 0;
  for (const key in entry) {
    if (key !== 'value' && key !== 'at') return false;
    keys++;
  }
  return keys > 0 && Object.hasOwn(entry, 'value');
}

function isLocation(g: unknown): boolean {
  if (g === null || g === undefined) return true;
  if (!(g instanceof CborTag) || g.tag !== TAG_GEO || !Array.isArray(g.value)) return false;
  const a = g.value;
  if (a.length < 2 || a.length > 4) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (!(typeof x === 'number' && Number.isFinite(x)) && !(i === 2 && x === undefined)) return false;
  }
  return true;
}

function emitCbor(
  env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number,
  name: string, entry: unknown, depth: number, batch?: BatchReadings,
): void {
  if (entry instanceof CborTag && entry.tag === TAG_DATA_POINT) {
    const point = entry.value;
    if (!Array.isArray(point)) return emit(env, device, out, defaultTs, name, point, undefined, depth + 1, true);
    if (point.length < 1 || point.length > 3) {
      return reject(out, 'INVALID_STATE', `data point (tag 120) array must hold 1 to 3 items, not ${point.length}`, name);
    }
    if (!isLocation(point[2])) {
      return reject(out, 'INVALID_STATE', 'data point (tag 120) location must be tag 103 [latitude, longitude, elevation?, uncertainty?] or null', name);
    }
    return emit(env, device, out, defaultTs, name, point[0], point[1], depth + 2, true, batch);
  }
  if (isFullForm(entry)) return emit(env, device, out, defaultTs, name, entry.value, entry.at, depth + 1, true, batch);
  emit(env, device, out, defaultTs, name, entry, undefined, depth, true);
}

function processCbor(env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number): void {
  let doc: unknown;
  try {
    doc = decodeCbor(env.body, MAX_JSON_DEPTH);
  } catch (error) {
    if (error instanceof CborDecodeError) throw new Abort(error.code, `body ${error.code === 'TOO_DEEP' ? 'nests too deeply' : 'is not valid CBOR'}: ${error.message}`);
    if (error instanceof RangeError) throw new Abort('TOO_DEEP', 'body nests too deeply to decode');
    throw error;
  }
  if (env.asset !== undefined) return emitCbor(env, device, out, defaultTs, env.asset, doc, 0);
  if (Array.isArray(doc)) {
    // A batch: an array of device state maps.
    checkBatchSize(doc.length);
    const batch = new BatchReadings();
    for (let i = 0; i < doc.length; i++) {
      const item = doc[i];
      batch.item = i;
      batchItem(out, i, () => {
        if (!isPlainObject(item)) return reject(out, 'INVALID_STATE', 'a batch item must be a device state: a CBOR map of asset name → value or {value, at}');
        for (const name in item) emitCbor(env, device, out, defaultTs, name, item[name], 2, batch);
      });
    }
    return;
  }
  if (doc instanceof CborMap) throw new Abort('INVALID_STATE', 'device state map keys must be asset names (text strings)');
  if (!isPlainObject(doc)) throw new Abort('INVALID_STATE', 'device state must be a CBOR map of asset name → value or {value, at}, or an array of them');
  for (const name in doc) emitCbor(env, device, out, defaultTs, name, doc[name], 1);
}

function processBinary(env: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput, defaultTs: number): void {
  const decoder = device.binaryDecoder;
  if (decoder === undefined) throw new Abort('DECODE_FAILED', 'binary payload, but the device type defines no binary decoder');
  const meta = device.binaryMeta;
  meta.fPort = env.network?.fPort;
  let decoded: unknown;
  try {
    decoded = decoder(env.body, meta);
  } catch (error) {
    throw new Abort('DECODE_FAILED', `binary decoder failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isPlainObject(decoded)) throw new Abort('DECODE_FAILED', 'binary decoder did not return a map of asset name → value');
  for (const name in decoded) emit(env, device, out, defaultTs, name, decoded[name], undefined, 1, false);
}

export function processUplink(envelope: UplinkEnvelope, device: CompiledDevice, out: UplinkOutput): void {
  const rowsBefore = out.rows.length;
  const rejectionsBefore = out.rejections.length;
  // An LPWAN network's own receive time is closer to the measurement than ours.
  const defaultTs = envelope.network?.receivedAt ?? envelope.receivedAt;
  try {
    if (envelope.deviceId !== device.info.id) {
      throw new Abort('PROCESSING_FAILED', `uplink for device ${envelope.deviceId} reached the actor of device ${device.info.id}`);
    }
    switch (envelope.contentType) {
      case 'json': processJson(envelope, device, out, defaultTs); break;
      case 'cbor': processCbor(envelope, device, out, defaultTs); break;
      case 'binary': processBinary(envelope, device, out, defaultTs); break;
      default: throw new Abort('UNSUPPORTED_CONTENT_TYPE', `content type ${JSON.stringify(envelope.contentType)} is not json, cbor or binary`);
    }
    numberReadings(out.rows, defaultTs, rowsBefore);
  } catch (error) {
    out.rows.length = rowsBefore;
    out.rejections.length = rejectionsBefore;
    out.rejections.push(error instanceof Abort
      ? error.rejection
      : { code: 'PROCESSING_FAILED', reason: `uplink processing failed: ${error instanceof Error ? error.message : String(error)}` });
  }
}
