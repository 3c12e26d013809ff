/**
 * The codec of topic `commands` (schemas/commands.ts): UTF-8 JSON records keyed by device id. The
 * edge checks a command against its device once and writes the record with that decision
 * (`accepted`); the command reader decodes it and delivers it as decided. A record without one
 * (appended by an application) is checked by the reader against its device (checkRecord) the way
 * the edge checks it (validateCommand.ts).
 *
 * With several edges, the topic also carries the edges' presence and delivery outcomes, and topic
 * `command-deliveries` the owners' delivery requests (schemas/commands.ts): their codecs are here too.
 */
import { Compile } from 'typebox/compile';
import type { ErrorCode } from '../kernel/errors.ts';
import type { AssetInfo, DeviceInfo } from '../ports/directory.ts';
import { CommandRecord, DeliveryRequest, OutcomeRecord, PresenceRecord, RollCall } from '../../schemas/commands.ts';
import type { AcceptedCommand } from '../actors/CommandActors.ts';
import { lpwanNetworkOf } from './lpwanNetworkOf.ts';
import { validateAssetCommand, validateDeviceCommand } from './validateCommand.ts';

export type CommandAcceptance = NonNullable<CommandRecord['accepted']>;

export type Refusal = { ok: false; code: ErrorCode; reason: string };

export type DecodedCommand = { ok: true; record: CommandRecord; at: string } | (Refusal & { commandId?: string });

export type Presence = PresenceRecord['presence'];
export type Outcome = OutcomeRecord['outcome'];

/** A record of topic `commands`: a command, or an edge's presence or delivery outcome. */
export type DecodedRecord = DecodedCommand | { ok: true; presence: Presence } | { ok: true; outcome: Outcome };

const checkSchema = Compile(CommandRecord);
const checkPresence = Compile(PresenceRecord);
const checkOutcome = Compile(OutcomeRecord);
const checkDelivery = Compile(DeliveryRequest);
const checkRollCall = Compile(RollCall);
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

export function encodeCommandRecord(record: CommandRecord): Uint8Array {
  return encoder.encode(JSON.stringify(record));
}

export function encodePresence(presence: Presence): Uint8Array {
  return encoder.encode(JSON.stringify({ presence } satisfies PresenceRecord));
}

export function encodeOutcome(outcome: Outcome): Uint8Array {
  return encoder.encode(JSON.stringify({ outcome } satisfies OutcomeRecord));
}

export function encodeDeliveryRequest(request: DeliveryRequest | RollCall): Uint8Array {
  return encoder.encode(JSON.stringify(request));
}

const NOT_JSON = Symbol('not JSON');

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return NOT_JSON;
  }
}

function schemaRefusal(what: string, errors: Iterable<{ instancePath: string; message: string }>): Refusal {
  const [first] = errors;
  return { ok: false, code: 'VALIDATION_FAILED', reason: `not ${what}: ${first ? `${first.instancePath || '/'} ${first.message}` : 'invalid'}` };
}

/** A record of topic `command-deliveries`: a delivery request or a roll call. */
export function decodeDeliveryRequest(bytes: Uint8Array): { ok: true; request: DeliveryRequest } | { ok: true; rollCall: RollCall['rollCall'] } | Refusal {
  const parsed = parseJson(bytes);
  if (parsed === NOT_JSON) return { ok: false, code: 'MALFORMED_JSON', reason: 'a delivery request is UTF-8 JSON' };
  if (parsed !== null && typeof parsed === 'object' && Object.hasOwn(parsed, 'rollCall')) {
    return checkRollCall.Check(parsed) ? { ok: true, rollCall: parsed.rollCall } : schemaRefusal('a roll call', checkRollCall.Errors(parsed));
  }
  if (!checkDelivery.Check(parsed)) return schemaRefusal('a delivery request', checkDelivery.Errors(parsed));
  return { ok: true, request: parsed };
}

/** Any record of topic `commands`: an edge's presence or outcome is told apart by its one key. */
export function decodeCommandsRecord(bytes: Uint8Array): DecodedRecord {
  const parsed = parseJson(bytes);
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    if (Object.hasOwn(parsed, 'presence')) {
      return checkPresence.Check(parsed) ? { ok: true, presence: parsed.presence } : schemaRefusal('a presence record', checkPresence.Errors(parsed));
    }
    if (Object.hasOwn(parsed, 'outcome')) {
      return checkOutcome.Check(parsed) ? { ok: true, outcome: parsed.outcome } : schemaRefusal('an outcome record', checkOutcome.Errors(parsed));
    }
  }
  return commandOf(parsed);
}

/** A record as the reader takes it, with the command's time; a refusal names the command once its id is known. */
export function decodeCommandRecord(bytes: Uint8Array): DecodedCommand {
  return commandOf(parseJson(bytes));
}

function commandOf(parsed: unknown): DecodedCommand {
  if (parsed === NOT_JSON) return { ok: false, code: 'MALFORMED_JSON', reason: 'a command record is UTF-8 JSON' };
  if (!checkSchema.Check(parsed)) {
    const first = checkSchema.Errors(parsed)[0];
    return { ok: false, code: 'VALIDATION_FAILED', reason: `not a command record: ${first ? `${first.instancePath || '/'} ${first.message}` : 'invalid'}` };
  }
  const record = parsed;
  if ((record.asset === undefined) === (record.assets === undefined)) {
    return { ok: false, code: 'VALIDATION_FAILED', reason: 'a command names either `asset` (with `value`) or `assets`', commandId: record.id };
  }
  const at = record.at ?? new Date(record.issuedAt).toISOString();
  if (Number.isNaN(Date.parse(at))) return { ok: false, code: 'INVALID_AT', reason: '`at` must be an ISO 8601 timestamp', commandId: record.id };
  return { ok: true, record, at };
}

/** The edge's decision carried by a record, when it carries a whole one (an asset command names its asset's id). */
export function decisionOf(record: CommandRecord): CommandAcceptance | undefined {
  const accepted = record.accepted;
  return accepted !== undefined && (record.asset === undefined || accepted.assetId !== undefined) ? accepted : undefined;
}

/** What an edge that checked a command against `device` writes on its record (`asset`: the asset of an asset command). */
export function acceptanceOf(device: DeviceInfo, asset?: AssetInfo): CommandAcceptance {
  // spec §4.4: a device on a LoRaWAN network takes commands only through its network.
  const downlink = asset !== undefined && lpwanNetworkOf(device) !== undefined;
  return { ...(asset === undefined ? {} : { assetId: asset.id }), ...(downlink ? { via: 'downlink' as const } : {}) };
}

/** A record without the edge's decision, checked against its device as the edge checks it. */
export function checkRecord(device: DeviceInfo, record: CommandRecord): { ok: true; value: CommandAcceptance } | Refusal {
  if (record.asset !== undefined) {
    const ok = validateAssetCommand(device, record.asset, record.value);
    return ok.ok ? { ok: true, value: acceptanceOf(device, ok.value) } : ok;
  }
  const ok = validateDeviceCommand(device, record.assets!);
  return ok.ok ? { ok: true, value: acceptanceOf(device) } : ok;
}

/** The command the actors deliver, from its record and the decision taken on it. */
export function acceptedCommand(record: CommandRecord, at: string, accepted: CommandAcceptance): AcceptedCommand {
  const base = { id: record.id, deviceId: record.deviceId, at, issuer: record.issuer, expiresAt: record.expiresAt };
  if (record.asset === undefined) return { ...base, kind: 'device', assets: record.assets! };
  const asset = { id: accepted.assetId ?? '', name: record.asset };
  return { ...base, kind: 'asset', asset, value: record.value, via: accepted.via ?? 'mqtt' };
}
