import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { initialTransition, transition } from 'xstate';
import { deviceMachine, initialDeviceState, nextDeviceState, type DeviceEvent, type DeviceLifecycleState } from '../../../engine/actors/deviceMachine.ts';

const states: DeviceLifecycleState[] = ['loading', 'active', 'unknown', 'passivated'];
const events: DeviceEvent['type'][] = ['LOADED', 'NOT_FOUND', 'LOAD_FAILED', 'STALE', 'PASSIVATE'];

test('the transition table agrees with xstate for every state and event', () => {
  const [initial] = initialTransition(deviceMachine);
  assert.is(initial.value, initialDeviceState);
  for (const state of states) {
    const snapshot = deviceMachine.resolveState({ value: state, context: undefined as never });
    for (const event of events) {
      const [next] = transition(deviceMachine, snapshot, { type: event });
      assert.is(nextDeviceState(state, event), next.value, `${state} --${event}-->`);
    }
  }
});

test('the lifecycle: load, stale reload, passivation is final', () => {
  let s = initialDeviceState;
  s = nextDeviceState(s, 'LOAD_FAILED');
  assert.is(s, 'loading');
  s = nextDeviceState(s, 'LOADED');
  assert.is(s, 'active');
  s = nextDeviceState(s, 'STALE');
  assert.is(s, 'loading');
  s = nextDeviceState(s, 'NOT_FOUND');
  assert.is(s, 'unknown');
  s = nextDeviceState(s, 'PASSIVATE');
  assert.is(s, 'passivated');
  for (const event of events) assert.is(nextDeviceState(s, event), 'passivated');
});

test.run();
