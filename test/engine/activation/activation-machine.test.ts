/**
 * The activation lifecycle machine (engine/activation/activationMachine.ts): every state × event pair.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor } from 'xstate';
import { activationMachine, decideActivation, type ActivationEventType, type ActivationLifecycleState } from '../../../engine/activation/activationMachine.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';

const EVENTS: ActivationEventType[] = ['ACTIVATE', 'CHANGE', 'DELETE'];

test('unused: ACTIVATE → used, CHANGE → unused, DELETE → deleted', () => {
  assert.is(decideActivation('unused', 'ACTIVATE'), 'used');
  assert.is(decideActivation('unused', 'CHANGE'), 'unused');
  assert.is(decideActivation('unused', 'DELETE'), 'deleted');
});

test('used and deleted are final: every event is a CONFLICT on field code', () => {
  const expected: Record<string, RegExp> = { ACTIVATE: /already used/, CHANGE: /cannot be changed/, DELETE: /cannot be deleted/ };
  for (const status of ['used', 'deleted'] as ActivationLifecycleState[]) {
    for (const event of EVENTS) {
      try {
        decideActivation(status, event);
        assert.unreachable(`${status} took ${event}`);
      } catch (error) {
        assert.instance(error, FleetError);
        const e = error as FleetError;
        assert.is(e.code, 'CONFLICT');
        assert.is(e.status, 409);
        assert.is(e.detail?.field, 'code');
        assert.is(e.detail?.status, status);
        assert.match(e.message, status === 'used' ? expected[event] : /deleted/);
      }
    }
  }
});

test('the machine runs as an actor: one ACTIVATE ends it; later events change nothing', () => {
  const actor = createActor(activationMachine).start();
  assert.is(actor.getSnapshot().value, 'unused');
  actor.send({ type: 'CHANGE' });
  assert.is(actor.getSnapshot().value, 'unused');
  actor.send({ type: 'ACTIVATE' });
  assert.is(actor.getSnapshot().value, 'used');
  assert.is(actor.getSnapshot().status, 'done');
  actor.send({ type: 'DELETE' });
  assert.is(actor.getSnapshot().value, 'used');
});

test.run();
