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
