/**
 * What the engine and the edges know, as live events (schemas/live.ts): stored state rows, dead
 * letters, command views and alarm changes. One place, so the stored, rejected and command paths cannot drift.
 */
import type { Alarm } from '../../schemas/alarms.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { LiveAlarm, LiveEvent } from '../../schemas/live.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';
import { isoTime } from '../kernel/isoTime.ts';

export function stateEvents(rows: readonly StateRow[]): LiveEvent[] {
  return rows.map((row) => ({
    kind: 'state',
    data: { deviceId: row.deviceId, asset: row.asset, value: row.value, at: isoTime(row.ts), receivedAt: row.receivedAt, uplinkId: row.uplinkId },
  }));
}

export function rejectionEvents(letters: readonly DeadLetter[]): LiveEvent[] {
  return letters.map((letter) => ({
    kind: 'rejection',
    data: {
      deviceId: letter.envelope.deviceId,
      code: letter.code,
      reason: letter.reason,
      ...(letter.asset !== undefined && letter.asset !== '' ? { asset: letter.asset } : {}),
      rejectedAt: letter.rejectedAt,
      uplinkId: letter.envelope.id,
    },
  }));
}

/** The command actors reuse one view object per command: the event copies what it needs. */
export function commandEvent(view: CommandView): LiveEvent {
  return {
    kind: 'command',
    data: {
      deviceId: view.deviceId,
      commandId: view.id,
      status: view.status,
      ...(view.asset !== undefined ? { asset: view.asset } : {}),
      attempts: view.attempts,
      changedAt: view.updatedAt,
      ...(view.code !== undefined ? { code: view.code } : {}),
      ...(view.reason !== undefined ? { reason: view.reason } : {}),
    },
  };
}

/** An alarm's change; `by`, the member who acknowledged or cleared it. */
export function alarmLiveEvent(change: LiveAlarm['change'], alarm: Alarm, by?: string): LiveEvent {
  return {
    kind: 'alarm',
    data: {
      deviceId: alarm.deviceId,
      alarmId: alarm.id,
      ruleId: alarm.ruleId,
      groundId: alarm.groundId,
      asset: alarm.asset,
      severity: alarm.severity,
      change,
      status: alarm.status,
      acknowledged: alarm.acknowledged,
      count: alarm.count,
      value: alarm.value,
      lastValue: alarm.lastValue,
      startedAt: alarm.startedAt,
      ...(alarm.clearedAt !== undefined ? { clearedAt: alarm.clearedAt } : {}),
      ...(alarm.acknowledgedAt !== undefined ? { acknowledgedAt: alarm.acknowledgedAt } : {}),
      ...(alarm.acknowledgedBy !== undefined ? { acknowledgedBy: alarm.acknowledgedBy } : {}),
      ...(by !== undefined ? { by } : {}),
      changedAt: alarm.updatedAt,
    },
  };
}
