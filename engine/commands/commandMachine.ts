/**
 * A command's lifecycle (DESIGN.md §4): queued → sent → delivered | expired | failed. `sent` goes
 * back to `queued` when the device did not acknowledge or went away (it is resent: at-least-once).
 * Transitions are pure (xstate `transition`); the actor holds snapshots and does the effects.
 */
import { initialTransition, setup, transition, type SnapshotFrom } from 'xstate';

export type CommandEvent =
  | { type: 'SEND' }
  | { type: 'DELIVERED' }
  | { type: 'REQUEUE' }
  | { type: 'EXPIRE' }
  | { type: 'FAIL' };

export const commandMachine = setup({ types: { events: {} as CommandEvent } }).createMachine({
  id: 'command',
  initial: 'queued',
  states: {
    queued: { on: { SEND: 'sent', EXPIRE: 'expired', FAIL: 'failed' } },
    sent: { on: { DELIVERED: 'delivered', REQUEUE: 'queued', EXPIRE: 'expired', FAIL: 'failed' } },
    delivered: { type: 'final' },
    expired: { type: 'final' },
    failed: { type: 'final' },
  },
});

export type CommandSnapshot = SnapshotFrom<typeof commandMachine>;

export function initialCommandSnapshot(): CommandSnapshot {
  return initialTransition(commandMachine)[0];
}

/** The next snapshot; the same one when the event does not apply in this state. */
export function nextCommandSnapshot(snapshot: CommandSnapshot, event: CommandEvent): CommandSnapshot {
  return transition(commandMachine, snapshot, event)[0];
}
