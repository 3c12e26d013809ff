/**
 * Dead letters as a device's rejections (`GET /device/{id}/rejections`), the one mapping every
 * producer of dead letters uses: the engine's pipeline and every edge's admission. A dead letter of
 * no device (an LPWAN uplink no device is bound to) stays on the topic only.
 */
import type { RejectionRow } from '../../ports/rejections.ts';
import type { DeadLetter } from '../../../schemas/messages.ts';

export function rejectionRowsOf(letters: readonly DeadLetter[]): RejectionRow[] {
  const rows: RejectionRow[] = [];
  for (const l of letters) {
    if (l.envelope.deviceId === '') continue;
    const row: RejectionRow = {
      deviceId: l.envelope.deviceId,
      rejectedAt: l.rejectedAt,
      code: l.code,
      reason: l.reason,
      asset: l.asset ?? '',
      uplinkId: l.envelope.id,
      channel: l.envelope.channel,
    };
    if (l.item !== undefined) row.item = l.item;
    rows.push(row);
  }
  return rows;
}
