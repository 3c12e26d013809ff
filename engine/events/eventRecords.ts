/**
 * The records of topic `events` (schemas/events.ts EventsRecord), one per source: what the engine
 * stored and refused of one uplink (with its place on topic `uplinks`), one command change, the
 * alarm changes of a device no uplink made; key = device id. They are compact: what the events of a
 * record share is written once and each event is expanded from it when read (expandEventsRecord),
 * with an id that comes from the source, so a source replayed after a crash yields the same ids:
 *
 * - a state: `<uplink id>/<asset>/<measurement time ms>/<reading>` (as the stored row's key);
 * - a refusal: `<uplink id>/rejection/<item or ->/<asset or ->/<code>`;
 * - a command change: `<command id>/<status>/<attempts>`.
 */
import { isoTime } from '../kernel/isoTime.ts';
import type { ProducerRecord } from '../ports/log.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { Alarm } from '../ports/alarmRegistry.ts';
import type { AlarmEvent, EventSource, RecordedCommand, RecordedRejection } from '../../schemas/events.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';

/**
 * What the engine made of one uplink, once durable: its stored states (rows of that uplink), then
 * its refusals (dead letters of its envelope), then the alarm changes its states made; `source`,
 * its record on topic `uplinks` (none for an uplink an edge refused whole: it never reached the
 * topic). Undefined for none of them.
 */
export function uplinkEventsRecord(rows: readonly StateRow[], letters: readonly DeadLetter[], source: EventSource | undefined, now: number, alarms: readonly AlarmEvent[] = []): ProducerRecord | undefined {
  const first = rows[0];
  const envelope = first === undefined ? letters[0]?.envelope : undefined;
  const deviceId = first?.deviceId ?? envelope?.deviceId;
  if (deviceId === undefined) return undefined;
  const uplinkId = first?.uplinkId ?? envelope!.id;
  const receivedAt = first?.receivedAt ?? envelope!.receivedAt;
  // Written as text, not built as objects for JSON.stringify: this runs for every uplink the engine
  // stores while the topic is written. A string with nothing to escape is quoted as is (quote()).
  let json = source === undefined ? '{' : `{"source":{"partition":${source.partition},"offset":${source.offset}},`;
  json += `"deviceId":${quote(deviceId)},"uplinkId":${quote(uplinkId)},"receivedAt":${receivedAt}`;
  if (rows.length > 0) {
    json += ',"states":[';
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const value = row.value;
      json += `${i === 0 ? '' : ','}[${quote(row.asset)},${row.ts},${typeof value === 'number' && Number.isFinite(value) ? String(value) : JSON.stringify(value)}${row.seq ? `,${row.seq}` : ''}]`;
    }
    json += ']';
  }
  if (letters.length > 0) json += `,"rejections":${JSON.stringify(letters.map(recordedRejection))}`;
  if (alarms.length > 0) json += `,"alarms":${JSON.stringify(alarms)}`;
  // Buffer.from: about half the time of TextEncoder on this text (its slices of Node's pool are
  // appended within milliseconds).
  return { key: deviceId, value: Buffer.from(`${json}}`, 'utf8'), timestamp: now };
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

function recordedRejection(letter: DeadLetter): RecordedRejection {
  const recorded: RecordedRejection = { code: letter.code, reason: letter.reason, rejectedAt: letter.rejectedAt };
  // An empty asset is kept: it is part of the refusal's id, though its event has no asset.
  if (letter.asset !== undefined) recorded.asset = letter.asset;
  if (letter.item !== undefined) recorded.item = letter.item;
  return recorded;
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
  const deviceId = events[0].deviceId;
  return { key: deviceId, value: Buffer.from(JSON.stringify({ deviceId, alarms: events }), 'utf8'), timestamp: now };
}

/** One command change (the actors reuse one view object per command: what is needed is copied). */
export function commandEventRecord(view: Readonly<CommandView>, now: number): ProducerRecord {
  const command: RecordedCommand = { commandId: view.id, status: view.status, attempts: view.attempts, changedAt: view.updatedAt };
  if (view.asset !== undefined) command.asset = view.asset;
  if (view.code !== undefined) command.code = view.code;
  if (view.reason !== undefined) command.reason = view.reason;
  return { key: view.deviceId, value: Buffer.from(JSON.stringify({ deviceId: view.deviceId, commands: [command] }), 'utf8'), timestamp: now };
}
