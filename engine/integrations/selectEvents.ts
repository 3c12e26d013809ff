/**
 * Which events of a record of topic `events` (schemas/events.ts) an integration receives: its event
 * types, its devices and its assets; and the alarms whose rules name it in an action. A refusal of a whole uplink and a command to a device (no
 * asset) pass an asset filter: they concern every asset of the device. Each event chosen is given
 * the integration's ground, as receivers get it.
 *
 * The topic is written by the engine, but on Kafka anyone allowed to append may write it: a record
 * that is not JSON, or not a record of events of its key's device (expandEventsRecord), is skipped
 * (`malformed`), never delivered and never a reason to stop.
 */
import type { Integration } from '../ports/integrationRegistry.ts';
import { expandEventsRecord, type ExpandedRecord } from '../events/expandEventsRecord.ts';
import type { EventSource } from '../../schemas/events.ts';

const decoder = new TextDecoder('utf-8', { fatal: true });
const TYPES = new Set(['state', 'rejection', 'command', 'alarm']);

export interface Selection {
  /** The events to deliver, in record order, each with `groundId`. */
  events: Record<string, unknown>[];
  /** The record could not be read as events of its device. */
  malformed: boolean;
  /** Where an uplink's events come from (schemas/events.ts EventSource). */
  source?: EventSource;
}

const NOTHING: Selection = { events: [], malformed: false };
const MALFORMED: Selection = { events: [], malformed: true };

/** `id`: the integration's, which an alarm event names when the rule's actions deliver it there. */
export type EventFilter = Pick<Integration, 'groundId' | 'events' | 'devices' | 'assets'> & { id?: string };

/** Whether any event of `deviceId` can reach the integration: the cheap test before a record is read. */
export function coversDevice(filter: EventFilter, deviceId: string): boolean {
  return filter.devices === undefined || filter.devices.includes(deviceId);
}

export function selectEvents(filter: EventFilter, deviceId: string, value: Uint8Array): Selection {
  if (!coversDevice(filter, deviceId)) return NOTHING;
  return selectParsed(filter, deviceId, parseRecord(value));
}

/** A record's value as JSON; MALFORMED_RECORD when it is not. */
export function parseRecord(value: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(value));
  } catch {
    return MALFORMED_RECORD;
  }
}

/** What parseRecord answers for a value that is not JSON. */
export const MALFORMED_RECORD = Symbol('malformed record');

/** selectEvents of a value parsed already (parseRecord): the parse of a record can serve every integration of a process. */
export function selectParsed(filter: EventFilter, deviceId: string, parsed: unknown): Selection {
  if (!coversDevice(filter, deviceId)) return NOTHING;
  return selectExpanded(filter, expandParsed(deviceId, parsed, filter.groundId));
}

/** The events of a record parsed already (parseRecord), each with `groundId`; undefined when it is malformed. */
export function expandParsed(deviceId: string, parsed: unknown, groundId: string): ExpandedRecord | undefined {
  // The ground is the integration's: a groundId written into the record does not count.
  return parsed === MALFORMED_RECORD ? undefined : expandEventsRecord(deviceId, parsed, groundId);
}

/**
 * The integration's events of a record expanded already with its ground (expandParsed; undefined:
 * malformed; a run of uplinks is malformed here). The events chosen are those of `record`, not copies, but for an alarm named by a
 * rule: that one is delivered without the names.
 */
export function selectExpanded(filter: EventFilter, record: ExpandedRecord | undefined): Selection {
  // A run of uplinks (schemas/events.ts UplinksRecord) is of several devices, of any ground: its
  // reader takes it uplink by uplink (DeliveryLane), never whole as the events of its key's device.
  if (record === undefined || record.parts !== undefined) return MALFORMED;
  const events: Record<string, unknown>[] = [];
  for (const event of record.events) {
    const type = event.type;
    if (!TYPES.has(type)) continue;
    // An alarm goes where its rule's actions send it, whatever events the integration takes, and
    // which integrations those are is nobody else's business.
    const integrations = event.integrations;
    const named = type === 'alarm' && filter.id !== undefined && Array.isArray(integrations) && integrations.includes(filter.id);
    if (!named) {
      if (!filter.events.includes(type as Integration['events'][number])) continue;
      if (filter.assets !== undefined && typeof event.asset === 'string' && !filter.assets.includes(event.asset)) continue;
    }
    if (integrations === undefined) {
      events.push(event);
      continue;
    }
    const { integrations: _names, ...delivered } = event;
    events.push(delivered);
  }
  return record.source === undefined ? { events, malformed: false } : { events, malformed: false, source: record.source };
}
