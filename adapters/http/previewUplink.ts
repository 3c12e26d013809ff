/**
 * Synchronous validation of an HTTP uplink by the device actor's own code (engine/uplink/
 * processUplink.ts) before it is appended, so a client gets the 4xx AllThingsTalk would answer
 * instead of a 202 for a value that can only be dropped:
 *   - a whole-message problem (MALFORMED_JSON/CBOR 400, INVALID_STATE/TOO_DEEP 422) refuses the
 *     uplink;
 *   - an asset state whose one value is refused (PROFILE_VIOLATION, INVALID_AT, INVALID_STATE 422)
 *     refuses the uplink;
 *   - a device state is refused when none of its assets yields a state; when some do, it is
 *     accepted and the 202 lists the entries that will be dropped (they also reach the rejections).
 * Nothing of the preview is kept: the actor processes the raw bytes from the log again with the
 * profiles it holds then, and stays the one source of truth for what is stored.
 */
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';
import type { DeviceWithAssets } from '../../engine/ports/registry.ts';
import type { UplinkSubmission } from '../../engine/uplink/UplinkIngest.ts';
import { compileDevice, type CompiledDevice } from '../../engine/uplink/admission/compileDevice.ts';
import { processUplink, type Rejection, type UplinkOutput } from '../../engine/uplink/admission/processUplink.ts';

/** Compiled per cached device object: a refreshed or changed device is a new object. */
const compiled = new WeakMap<DeviceWithAssets, CompiledDevice>();

function compiledOf(device: DeviceWithAssets): CompiledDevice {
  let c = compiled.get(device);
  if (c === undefined) {
    c = compileDevice(device);
    compiled.set(device, c);
  }
  return c;
}

function refuse(rejections: readonly Rejection[]): FleetError {
  const first = rejections[0];
  const errors = rejections.map((r) => ({ path: r.asset === undefined ? 'body' : `body.${r.asset}`, message: `${r.code}: ${r.reason}` }));
  const more = rejections.length > 1 ? ` (and ${rejections.length - 1} more)` : '';
  return new FleetError(first.code as ErrorCode, `${first.reason}${more}`, { detail: { errors } });
}

/** Throws the refusal; otherwise returns the per-asset rejections of an accepted device state. */
export function previewUplink(device: DeviceWithAssets, submission: UplinkSubmission, receivedAt: number): Rejection[] {
  const out: UplinkOutput = { rows: [], rejections: [] };
  processUplink({ ...submission, id: 'preview', receivedAt }, compiledOf(device), out);
  if (out.rejections.length === 0) return [];
  const whole = out.rejections.some((r) => r.asset === undefined);
  if (whole || submission.asset !== undefined || out.rows.length === 0) throw refuse(out.rejections);
  return out.rejections;
}
