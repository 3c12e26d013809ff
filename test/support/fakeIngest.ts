/**
 * An ingest for tests of admission (engine/uplink/UplinkAdmission.ts) from one async function: the
 * uplink is durable when it resolves, and not when it rejects (a FleetError as it is, anything else
 * as UNAVAILABLE, as the real ingest's log failures are).
 */
import { toFleetError } from '../../engine/kernel/errors.ts';
import type { UplinkIngest, UplinkSubmission } from '../../engine/uplink/UplinkIngest.ts';
import type { UplinkEnvelope } from '../../schemas/messages.ts';

export function fakeIngest(append: (submission: UplinkSubmission) => Promise<unknown>): Pick<UplinkIngest, 'appendThen'> {
  return {
    appendThen(submission, done) {
      append(submission).then(() => done(), (error: unknown) => done(toFleetError(error, 'UNAVAILABLE')));
      return submission as UplinkEnvelope;
    },
  };
}
