/**
 * The records of topic `events` (schemas/events.ts), one per source: what the engine stored and
 * refused of one uplink (with its place on topic `uplinks`), one command change; key = device id.
 * Event ids come from the source, so a source replayed after a crash yields the same ids:
 *
 * - a state: `<uplink id>/<asset>/<measurement time ms>/<reading>` (as the stored row's key);
 * - a refusal: `<uplink id>/rejection/<item or ->/<asset or ->/<code>`;
 * - a command change: `<command id>/<status>/<attempts>`.
 */
import { isoTime } from '../kernel/isoTime.ts';
import type { ProducerRecord } from '../ports/log.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { CommandEvent, EventSource, RejectionEvent, StateEvent } from '../../schemas/events.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';

const encoder = new TextEncoder();

function record(deviceId: string, events: readonly unknown[], timestamp: number): ProducerRecord {
  return { key: deviceId, value: encoder.encode(JSON.stringify({ events })), timestamp };
}

/**
 * What the engine made of one uplink, once durable: its stored states (rows of one device), then
 * its refusals (dead letters of its envelope); `source`, its record on topic `uplinks` (none for an
 * uplink an edge refused whole: it never reached the topic). Undefined for neither.
 */
export function uplinkEventsRecord(rows: readonly StateRow[], letters: readonly DeadLetter[], source: EventSource | undefined, now: number): ProducerRecord | undefined {
  const deviceId = rows[0]?.deviceId ?? letters[0]?.envelope.deviceId;
  if (deviceId === undefined) return undefined;
  const events: (StateEvent | RejectionEvent)[] = rows.map(stateEvent);
  for (const letter of letters) events.push(rejectionEvent(letter));
  return { key: deviceId, value: encoder.encode(JSON.stringify(source === undefined ? { events } : { source, events })), timestamp: now };
}

function stateEvent(row: StateRow): StateEvent {
  return {
    type: 'state',
    id: `${row.uplinkId}/${row.asset}/${row.ts}/${row.seq ?? 0}`,
    deviceId: row.deviceId,
    asset: row.asset,
    value: row.value,
    at: isoTime(row.ts),
    receivedAt: isoTime(row.receivedAt),
    uplinkId: row.uplinkId,
  };
}

function rejectionEvent(letter: DeadLetter): RejectionEvent {
  const event: RejectionEvent = {
    type: 'rejection',
    id: `${letter.envelope.id}/rejection/${letter.item ?? '-'}/${letter.asset ?? '-'}/${letter.code}`,
    deviceId: letter.envelope.deviceId,
    code: letter.code,
    reason: letter.reason,
    rejectedAt: isoTime(letter.rejectedAt),
    receivedAt: isoTime(letter.envelope.receivedAt),
    uplinkId: letter.envelope.id,
  };
  if (letter.asset !== undefined && letter.asset !== '') event.asset = letter.asset;
  if (letter.item !== undefined) event.item = letter.item;
  return event;
}

/** One command change (the actors reuse one view object per command: what is needed is copied). */
export function commandEventRecord(view: Readonly<CommandView>, now: number): ProducerRecord {
  const event: CommandEvent = {
    type: 'command',
    id: `${view.id}/${view.status}/${view.attempts}`,
    deviceId: view.deviceId,
    commandId: view.id,
    status: view.status,
    attempts: view.attempts,
    changedAt: isoTime(view.updatedAt),
  };
  if (view.asset !== undefined) event.asset = view.asset;
  if (view.code !== undefined) event.code = view.code;
  if (view.reason !== undefined) event.reason = view.reason;
  return record(view.deviceId, [event], now);
}
