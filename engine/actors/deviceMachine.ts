/**
 * Device actor lifecycle (DESIGN.md §4). Transitions only; effects (loading the device, draining the
 * mailbox, passivating) are done by DeviceActor on entering states.
 *
 *   loading ──LOADED──► active ──STALE──► loading
 *      │ NOT_FOUND        │
 *      ▼                  │ PASSIVATE
 *   unknown ──PASSIVATE───┴──────────► passivated (final)
 *      ▲ RETRY_LOAD failures stay in loading; unknown re-checks on STALE.
 */
import { setup } from 'xstate';

export type DeviceEvent =
  | { type: 'LOADED' }
  | { type: 'NOT_FOUND' }
  | { type: 'LOAD_FAILED' }
  | { type: 'STALE' }
  | { type: 'PASSIVATE' };

export const deviceMachine = setup({
  types: { events: {} as DeviceEvent },
}).createMachine({
  id: 'device',
  initial: 'loading',
  states: {
    loading: {
      on: { LOADED: 'active', NOT_FOUND: 'unknown', LOAD_FAILED: 'loading', PASSIVATE: 'passivated' },
    },
    active: {
      on: { STALE: 'loading', PASSIVATE: 'passivated' },
    },
    unknown: {
      on: { STALE: 'loading', PASSIVATE: 'passivated' },
    },
    passivated: { type: 'final' },
  },
});

export type DeviceLifecycleState = 'loading' | 'active' | 'unknown' | 'passivated';

type TransitionTable = Record<DeviceLifecycleState, Partial<Record<DeviceEvent['type'], DeviceLifecycleState>>>;

/**
 * The machine's transitions as a lookup table, read once from its definition. A device actor keeps
 * only its state name and steps it through this table: a running xstate actor per device cost
 * ~3.6 KB and ~20 µs per device, which a million devices cycling through one process cannot afford.
 * test/engine/actors/device-lifecycle.test.ts checks the table against xstate's own `transition()` for every
 * state and event.
 */
const table: TransitionTable = (() => {
  const out = {} as TransitionTable;
  for (const [state, node] of Object.entries(deviceMachine.config.states ?? {})) {
    const on = (node as { on?: Record<string, string> }).on ?? {};
    out[state as DeviceLifecycleState] = Object.fromEntries(Object.entries(on)) as TransitionTable[DeviceLifecycleState];
  }
  return out;
})();

export const initialDeviceState = deviceMachine.config.initial as DeviceLifecycleState;

/** The state after `event`; unchanged when the machine does not handle the event in `state`. */
export function nextDeviceState(state: DeviceLifecycleState, event: DeviceEvent['type']): DeviceLifecycleState {
  return table[state][event] ?? state;
}
