/**
 * The records of topic `events` (schemas/events.ts), one per source: what the engine stored and
 * refused of one uplink (with its place on topic `uplinks`), one command change, the alarm changes
 * of a device no uplink made; key = device id.
 * Event ids come from the source, so a source replayed after a crash yields the same ids:
 *
 * - a state: `<uplink id>/<asset>/<measurement time ms>/<reading>` (as the stored row's key);
 * - a refusal: `<uplink id>/rejection/<item or ->/<asset or ->/<code>`;
 * - a command change: `<command id>/<status>/<attempts>`.
 */
import { isoTime } from '../kernel/isoTime.ts';
import type { ProducerRecord } from '../ports/log.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { Alarm } from '../ports/alarmRegistry.ts';
import type { AlarmEvent, CommandEvent, EventSource, RejectionEvent } from '../../schemas/events.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';

const encoder = new TextEncoder();

function record(deviceId: string, events: readonly unknown[], timestamp: number): ProducerRecord {
  return { key: deviceId, value: encoder.encode(JSON.stringify({ events })), timestamp };
}

/**
 * What the engine made of one uplink, once durable: its stored states (rows of one device), then
 * its refusals (dead letters of its envelope), then the alarm changes its states made; `source`,
 * its record on topic `uplinks` (none for an uplink an edge refused whole: it never reached the
 * topic). Undefined for none of them.
 */
export function uplinkEventsRecord(rows: readonly StateRow[], letters: readonly DeadLetter[], source: EventSource | undefined, now: number, alarms: readonly AlarmEvent[] = []): ProducerRecord | undefined {
  const deviceId = rows[0]?.deviceId ?? letters[0]?.envelope.deviceId;
  if (deviceId === undefined) return undefined;
  // Written as text, not built as objects for JSON.stringify: this runs for every uplink the engine
  // stores while the topic is written, and the objects were most of its cost (and garbage). The
  // strings of one uplink (its id, device, time) are quoted once; a string with nothing to escape
  // is quoted as is (quote()).
  let json = source === undefined ? '{"events":[' : `{"source":{"partition":${source.partition},"offset":${source.offset}},"events":[`;
  let receivedAt = -1;
  let receivedIso = '';
  let uplinkId: string | undefined;
  let uplinkQuoted = '';
  let idPrefix = '';
  let device: string | undefined;
  let deviceQuoted = '';
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row.receivedAt !== receivedAt) {
      receivedAt = row.receivedAt;
      receivedIso = isoTime(receivedAt);
    }
    if (row.uplinkId !== uplinkId) {
      uplinkId = row.uplinkId;
      uplinkQuoted = quote(uplinkId);
      idPrefix = uplinkQuoted.length === uplinkId.length + 2 ? uplinkId : '';
    }
    if (row.deviceId !== device) {
      device = row.deviceId;
      deviceQuoted = quote(device);
    }
    const at = row.ts === receivedAt ? receivedIso : isoTime(row.ts);
    const asset = quote(row.asset);
    const id = idPrefix !== '' && asset.length === row.asset.length + 2
      ? `"${idPrefix}/${row.asset}/${row.ts}/${row.seq ?? 0}"`
      : JSON.stringify(stateId(row));
    const value = row.value;
    json += `${i === 0 ? '' : ','}{"type":"state","id":${id},"deviceId":${deviceQuoted},`
      + `"asset":${asset},"value":${typeof value === 'number' && Number.isFinite(value) ? String(value) : JSON.stringify(value)},"at":"${at}","receivedAt":"${receivedIso}","uplinkId":${uplinkQuoted}}`;
  }
  for (let i = 0; i < letters.length; i++) json += `${rows.length + i === 0 ? '' : ','}${JSON.stringify(rejectionEvent(letters[i]))}`;
  for (let i = 0; i < alarms.length; i++) json += `${rows.length + letters.length + i === 0 ? '' : ','}${JSON.stringify(alarms[i])}`;
  // Buffer.from: about half the time of TextEncoder on this text (its slices of Node's pool are
  // appended within milliseconds).
  return { key: deviceId, value: Buffer.from(`${json}]}`, 'utf8'), timestamp: now };
}

/** A stored state's id (as its event's and its row's key): `<uplink id>/<asset>/<measurement time ms>/<reading>`. */
export function stateId(row: Pick<StateRow, 'uplinkId' | 'asset' | 'ts' | 'seq'>): string {
  return `${row.uplinkId}/${row.asset}/${row.ts}/${row.seq ?? 0}`;
}

/** Printable ASCII other than `"` and `\\`: a string of only these is its own JSON body. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** `s` as a JSON string: as is between quotes when nothing in it needs escaping. */
function quote(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
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

/**
 * An alarm change made by a state (engine/rules/RuleEvaluator.ts); `integrations`, those the rule's
 * actions name. Its id is the alarm's, the change and the count: one per change.
 */
export function alarmEvent(alarm: Alarm, change: AlarmEvent['change'], integrations: readonly string[], at: number): AlarmEvent {
  const event: AlarmEvent = {
    type: 'alarm',
    id: `${alarm.id}/${change}/${alarm.count}`,
    deviceId: alarm.deviceId,
    alarmId: alarm.id,
    ruleId: alarm.ruleId,
    change,
    status: alarm.status,
    severity: alarm.severity,
    asset: alarm.asset,
    count: alarm.count,
    value: alarm.value,
    lastValue: alarm.lastValue,
    at: isoTime(at),
  };
  if (integrations.length > 0) event.integrations = [...integrations];
  return event;
}

/** Alarm changes of one device that no uplink made (timers, the end of a silence, a member): one record. */
export function alarmEventsRecord(events: readonly AlarmEvent[], now: number): ProducerRecord {
  return record(events[0].deviceId, events, now);
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
