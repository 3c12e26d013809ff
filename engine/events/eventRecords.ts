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
import { JsonBytes } from './JsonBytes.ts';
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
  const events = uplinkEvents(rows, letters, source, alarms);
  return events === undefined ? undefined : { key: events.deviceId, value: writeUplinkEvents(bytes, events).take(), timestamp: now };
}

/**
 * What makes an uplink's record of topic `events` (uplinkEventsRecord), its text not yet written:
 * those of a run of uplinks may share a record (EventWriter `combine`), written at once.
 */
export interface UplinkEvents {
  deviceId: string;
  uplinkId: string;
  receivedAt: number;
  rows: readonly StateRow[];
  letters: readonly DeadLetter[];
  source: EventSource | undefined;
  alarms: readonly AlarmEvent[];
  /** Its events: states, refusals and alarm changes. */
  count: number;
}

/** Undefined for no states and no refusals. */
export function uplinkEvents(rows: readonly StateRow[], letters: readonly DeadLetter[], source: EventSource | undefined, alarms: readonly AlarmEvent[] = []): UplinkEvents | undefined {
  const first = rows[0];
  const envelope = first === undefined ? letters[0]?.envelope : undefined;
  const deviceId = first?.deviceId ?? envelope?.deviceId;
  if (deviceId === undefined) return undefined;
  return {
    deviceId, uplinkId: first?.uplinkId ?? envelope!.id, receivedAt: first?.receivedAt ?? envelope!.receivedAt,
    rows, letters, source, alarms, count: rows.length + letters.length + alarms.length,
  };
}

const bytes = new JsonBytes();

/**
 * The record's JSON object (EventsRecord), written into `out`: straight into bytes, for this runs
 * for every uplink the engine stores while the topic is written (JsonBytes).
 */
export function writeUplinkEvents(out: JsonBytes, events: UplinkEvents): JsonBytes {
  const { source, rows, letters, alarms } = events;
  if (source === undefined) out.raw('{');
  else out.raw('{"source":{"partition":').integer(source.partition).raw(',"offset":').integer(source.offset).raw('},');
  out.raw('"deviceId":').string(events.deviceId).raw(',"uplinkId":').string(events.uplinkId).raw(',"receivedAt":').integer(events.receivedAt);
  if (rows.length > 0) {
    out.raw(',"states":[');
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      out.raw(i === 0 ? '[' : ',[').string(row.asset).raw(',').integer(row.ts).raw(',').value(row.value);
      if (row.seq) out.raw(',').integer(row.seq);
      out.raw(']');
    }
    out.raw(']');
  }
  if (letters.length > 0) out.raw(',"rejections":').utf8(JSON.stringify(letters.map(recordedRejection)));
  if (alarms.length > 0) out.raw(',"alarms":').utf8(JSON.stringify(alarms));
  return out.raw('}');
}

/** A stored state's id (as its event's and its row's key): `<uplink id>/<asset>/<measurement time ms>/<reading>`. */
export function stateId(row: Pick<StateRow, 'uplinkId' | 'asset' | 'ts' | 'seq'>): string {
  return `${row.uplinkId}/${row.asset}/${row.ts}/${row.seq ?? 0}`;
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
