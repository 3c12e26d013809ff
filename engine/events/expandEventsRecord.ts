/**
 * The events of a record of topic `events` (schemas/events.ts EventsRecord), expanded from its
 * compact form as integrations deliver them (with `groundId`, the integration's, when given): the
 * shared fields of the record copied into each event, times as ISO 8601, ids derived from the
 * source (engine/events/eventRecords.ts). Records of the earlier form, `{"events":[…]}` with the
 * events written out, are read as they are: the topic keeps 7 days of them across an upgrade.
 *
 * The topic is written by the engine, but on Kafka anyone allowed to append may write it: a record
 * that is not of either form, or of another device than its key, or with a time out of range, is
 * malformed (undefined), never half read.
 */
import { isoTime } from '../kernel/isoTime.ts';
import type { EventSource } from '../../schemas/events.ts';

/** An event as delivered, its fields in delivery order. */
export type ExpandedEvent = Record<string, unknown> & { type: string; id: string };

export interface ExpandedRecord {
  /** In record order: states, refusals, alarm changes; or command changes. Of a run of uplinks: theirs, one after the other. */
  events: ExpandedEvent[];
  source?: EventSource;
  /** Of a run of uplinks (UplinksRecord): each uplink's device, source and events (those of `events`). */
  parts?: ExpandedPart[];
}

/** One uplink of a run (schemas/events.ts UplinksRecord). */
export interface ExpandedPart {
  deviceId: string;
  source?: EventSource;
  events: ExpandedEvent[];
}

/**
 * `parsed`: the record's value, parsed JSON; `deviceId`: its key. With `groundId`, each event carries
 * it third (after `type` and `id`), as an integration delivers it: a `groundId` written into the
 * record does not count.
 */
export function expandEventsRecord(deviceId: string, parsed: unknown, groundId?: string): ExpandedRecord | undefined {
  if (!isObject(parsed)) return undefined;
  if (parsed.uplinks !== undefined) return run(deviceId, parsed.uplinks, groundId);
  const source = parsed.source;
  if (source !== undefined && !isSource(source)) return undefined;
  const events = Array.isArray(parsed.events) ? writtenOut(deviceId, parsed.events, groundId) : compact(deviceId, parsed, groundId);
  if (events === undefined || events.length === 0) return undefined;
  return source === undefined ? { events } : { events, source };
}

/**
 * A run of uplinks: each an uplink's record (states or refusals, each of its own device), the first
 * of the record's key; `source` is the last one's.
 */
function run(deviceId: string, uplinks: unknown, groundId: string | undefined): ExpandedRecord | undefined {
  if (!Array.isArray(uplinks) || uplinks.length === 0 || !isObject(uplinks[0]) || uplinks[0].deviceId !== deviceId) return undefined;
  const parts: ExpandedPart[] = [];
  const events: ExpandedEvent[] = [];
  for (const uplink of uplinks as unknown[]) {
    if (!isObject(uplink) || typeof uplink.deviceId !== 'string' || uplink.commands !== undefined || uplink.uplinks !== undefined) return undefined;
    if (uplink.states === undefined && uplink.rejections === undefined) return undefined;
    const expanded = expandEventsRecord(uplink.deviceId, uplink, groundId);
    if (expanded === undefined) return undefined;
    parts.push(expanded.source === undefined ? { deviceId: uplink.deviceId, events: expanded.events } : { deviceId: uplink.deviceId, source: expanded.source, events: expanded.events });
    for (const event of expanded.events) events.push(event);
  }
  const source = parts[parts.length - 1].source;
  return source === undefined ? { events, parts } : { events, source, parts };
}

function writtenOut(deviceId: string, list: unknown[], groundId: string | undefined): ExpandedEvent[] | undefined {
  for (const item of list) if (!isEvent(item, deviceId)) return undefined;
  return groundId === undefined ? list as ExpandedEvent[] : (list as ExpandedEvent[]).map((event) => grounded(event, groundId));
}

/** `event` with `groundId` third, in place of one it was written with. */
function grounded(event: ExpandedEvent, groundId: string): ExpandedEvent {
  const { type, id, groundId: _written, ...rest } = event;
  return { type, id, groundId, ...rest };
}

function compact(deviceId: string, record: Record<string, unknown>, groundId: string | undefined): ExpandedEvent[] | undefined {
  if (record.deviceId !== deviceId) return undefined;
  const { uplinkId, receivedAt, states, rejections, alarms, commands } = record;
  for (const list of [states, rejections, alarms, commands]) if (list !== undefined && !Array.isArray(list)) return undefined;
  const events: ExpandedEvent[] = [];
  if (states !== undefined || rejections !== undefined) {
    if (typeof uplinkId !== 'string' || uplinkId === '' || !isTime(receivedAt)) return undefined;
    const received = isoTime(receivedAt);
    for (const state of (states ?? []) as unknown[]) {
      if (!Array.isArray(state) || state.length < 3 || state.length > 4) return undefined;
      const [asset, at, value, seq = 0] = state as [unknown, unknown, unknown, unknown];
      if (typeof asset !== 'string' || !isTime(at) || !(Number.isSafeInteger(seq) && (seq as number) >= 0)) return undefined;
      const id = `${uplinkId}/${asset}/${at}/${seq}`;
      const iso = at === receivedAt ? received : isoTime(at);
      // Built whole rather than through grounded(): this runs for every state and integration.
      events.push(groundId === undefined
        ? { type: 'state', id, deviceId, asset, value, at: iso, receivedAt: received, uplinkId }
        : { type: 'state', id, groundId, deviceId, asset, value, at: iso, receivedAt: received, uplinkId });
    }
    for (const item of (rejections ?? []) as unknown[]) {
      const rejection = refusal(item, deviceId, uplinkId, received);
      if (rejection === undefined) return undefined;
      events.push(groundId === undefined ? rejection : grounded(rejection, groundId));
    }
  }
  for (const item of (alarms ?? []) as unknown[]) {
    if (!isEvent(item, deviceId) || item.type !== 'alarm') return undefined;
    events.push(groundId === undefined ? item : grounded(item, groundId));
  }
  for (const item of (commands ?? []) as unknown[]) {
    const change = commandChange(item, deviceId);
    if (change === undefined) return undefined;
    events.push(groundId === undefined ? change : grounded(change, groundId));
  }
  return events;
}

function refusal(item: unknown, deviceId: string, uplinkId: string, receivedAt: string): ExpandedEvent | undefined {
  if (!isObject(item)) return undefined;
  const { code, reason, rejectedAt, asset, item: index } = item;
  if (typeof code !== 'string' || typeof reason !== 'string' || !isTime(rejectedAt)) return undefined;
  if (asset !== undefined && typeof asset !== 'string') return undefined;
  if (index !== undefined && !(Number.isSafeInteger(index) && (index as number) >= 0)) return undefined;
  const event: ExpandedEvent = {
    type: 'rejection', id: `${uplinkId}/rejection/${index ?? '-'}/${asset ?? '-'}/${code}`, deviceId,
    code, reason, rejectedAt: isoTime(rejectedAt), receivedAt, uplinkId,
  };
  if (asset !== undefined && asset !== '') event.asset = asset;
  if (index !== undefined) event.item = index;
  return event;
}

function commandChange(item: unknown, deviceId: string): ExpandedEvent | undefined {
  if (!isObject(item)) return undefined;
  const { commandId, status, attempts, changedAt, asset, code, reason } = item;
  if (typeof commandId !== 'string' || commandId === '' || typeof status !== 'string' || !isTime(changedAt)) return undefined;
  if (!(Number.isSafeInteger(attempts) && (attempts as number) >= 0)) return undefined;
  for (const optional of [asset, code, reason]) if (optional !== undefined && typeof optional !== 'string') return undefined;
  const event: ExpandedEvent = {
    type: 'command', id: `${commandId}/${status}/${attempts}`, deviceId, commandId, status, attempts, changedAt: isoTime(changedAt),
  };
  if (asset !== undefined) event.asset = asset;
  if (code !== undefined) event.code = code;
  if (reason !== undefined) event.reason = reason;
  return event;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Epoch ms an ISO 8601 string can hold (Date's range). */
function isTime(value: unknown): value is number {
  return Number.isSafeInteger(value) && Math.abs(value as number) <= 8.64e15;
}

function isSource(value: unknown): value is EventSource {
  return isObject(value) && Number.isSafeInteger(value.partition) && (value.partition as number) >= 0
    && Number.isSafeInteger(value.offset) && (value.offset as number) >= 0;
}

function isEvent(item: unknown, deviceId: string): item is ExpandedEvent {
  if (!isObject(item)) return false;
  return typeof item.type === 'string' && typeof item.id === 'string' && item.id !== '' && item.deviceId === deviceId
    && (item.asset === undefined || typeof item.asset === 'string');
}
