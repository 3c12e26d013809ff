/** Catching the FleetError a call is expected to fail with, for assertions on its code and fields. */
import * as assert from 'uvu/assert';
import { FleetError } from '../../engine/kernel/errors.ts';

/** The FleetError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<FleetError> {
  try {
    await promise;
  } catch (error) {
    assert.instance(error, FleetError);
    return error as FleetError;
  }
  throw new Error('expected a rejection');
}

/** The FleetError `fn` throws; fails the test when it returns or throws anything else. */
export function thrownBy(fn: () => unknown): FleetError {
  try {
    fn();
  } catch (error) {
    assert.instance(error, FleetError);
    return error as FleetError;
  }
  assert.unreachable('should throw');
  throw new Error('unreachable');
}
