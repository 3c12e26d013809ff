/**
 * The one admission step (DESIGN.md §9 "Admission once"): whether an uplink is well-formed and what
 * it yields is decided here, once, by the edge that received it — HTTP, MQTT and LPWAN alike — with
 * the device it resolved. The decision travels with the uplink on the log (`admitted`, schemas/
 * messages.ts), so the engine stores exactly what the edge answered and never decodes the body
 * again; only records without it (written before admission existed, or by other producers) are
 * admitted by the device actor.
 *
 * Verdict (what a channel that can answer at once tells its client):
 *   refused   — a whole-message problem (MALFORMED_JSON/CBOR, INVALID_STATE, TOO_DEEP,
 *               DECODE_FAILED, …); an asset state (one named asset) whose value is refused; a
 *               device state none of whose entries yields a state. Nothing is stored.
 *   accepted  — the states are stored; entries refused one by one (UNKNOWN_ASSET,
 *               PROFILE_VIOLATION, INVALID_AT, INVALID_STATE), and whole items of a batch (an
 *               array of device states), are `dropped` and recorded.
 */
import type { AdmittedUplink, StateRow, UplinkEnvelope } from '../../../schemas/messages.ts';
import type { CompiledDevice } from './compileDevice.ts';
import { numberReadings } from './numberReadings.ts';
import { processUplink, type Rejection, type UplinkOutput } from './processUplink.ts';

export type Admission =
  | { verdict: 'accepted'; rows: StateRow[]; dropped: Rejection[] }
  | { verdict: 'refused'; rejections: Rejection[] };

export function admitUplink(envelope: UplinkEnvelope, device: CompiledDevice): Admission {
  const out: UplinkOutput = { rows: [], rejections: [] };
  processUplink(envelope, device, out);
  const { rows, rejections } = out;
  const whole = (r: Rejection) => r.asset === undefined && r.item === undefined;
  if (rejections.length > 0 && (rows.length === 0 || envelope.asset !== undefined || rejections.some(whole))) {
    return { verdict: 'refused', rejections };
  }
  return { verdict: 'accepted', rows, dropped: rejections };
}

/** What an accepted uplink carries on the log. */
export function carried(admission: Extract<Admission, { verdict: 'accepted' }>): AdmittedUplink {
  return {
    states: admission.rows.map((row) => [row.asset, row.ts, row.value]),
    dropped: admission.dropped.map((r) => r.item === undefined ? [r.asset ?? '', r.code, r.reason] : [r.asset ?? '', r.code, r.reason, r.item]),
  };
}

/** The rows and rejections of an admitted envelope, as the engine stores and dead-letters them. */
export function outputOf(envelope: UplinkEnvelope & { admitted: AdmittedUplink }): UplinkOutput {
  const { deviceId, receivedAt, id } = envelope;
  const { states, dropped } = envelope.admitted;
  const rows: StateRow[] = new Array(states.length);
  for (let i = 0; i < states.length; i++) {
    const [asset, ts, value] = states[i];
    rows[i] = { deviceId, asset, ts, receivedAt, value: value as StateRow['value'], uplinkId: id };
  }
  // The states keep admission's order, so they get the numbers admission gave them (the same
  // default time as processUplink's).
  numberReadings(rows, envelope.network?.receivedAt ?? receivedAt);
  const rejections: Rejection[] = dropped.map(([asset, code, reason, item]) => {
    const rejection: Rejection = { asset, code: code as Rejection['code'], reason };
    if (item !== undefined) rejection.item = item;
    return rejection;
  });
  return { rows, rejections };
}
