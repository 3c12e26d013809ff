/**
 * Activation lifecycle (spec §2.5, §3; DESIGN.md §4 "Activation: unused → used, one-shot").
 * Transitions only: the registry locks the activation's row, asks decideActivation() what the event
 * leads to, and performs the effect (create the device and mark the code used; rewrite the options;
 * delete the row) in the same transaction. An event the state does not take is a CONFLICT (409).
 *
 *   unused ──ACTIVATE──► used (final: a code is redeemed once)
 *     │ ▲
 *     │ └─CHANGE (description, options)
 *     └──DELETE──► deleted (final)
 */
import { setup, transition } from 'xstate';
import { FleetError } from '../kernel/errors.ts';

export type ActivationEvent = { type: 'ACTIVATE' } | { type: 'CHANGE' } | { type: 'DELETE' };
export type ActivationEventType = ActivationEvent['type'];
export type ActivationLifecycleState = 'unused' | 'used' | 'deleted';

export const activationMachine = setup({
  types: { events: {} as ActivationEvent },
}).createMachine({
  id: 'activation',
  initial: 'unused',
  states: {
    unused: { on: { ACTIVATE: 'used', CHANGE: 'unused', DELETE: 'deleted' } },
    used: { type: 'final' },
    deleted: { type: 'final' },
  },
});

const REFUSED: Record<ActivationEventType, string> = {
  ACTIVATE: 'the activation code was already used',
  CHANGE: 'a used activation cannot be changed',
  DELETE: 'a used activation cannot be deleted',
};

/**
 * The state `event` leads to from `status`, or CONFLICT (detail.field `code`) when the lifecycle
 * does not allow it.
 */
export function decideActivation(status: ActivationLifecycleState, event: ActivationEventType): ActivationLifecycleState {
  const snapshot = activationMachine.resolveState({ value: status });
  if (!snapshot.can({ type: event })) {
    throw new FleetError('CONFLICT', status === 'deleted' ? 'the activation was deleted' : REFUSED[event], { detail: { field: 'code', status } });
  }
  const [next] = transition(activationMachine, snapshot, { type: event });
  return next.value as ActivationLifecycleState;
}
