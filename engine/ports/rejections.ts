/**
 * Recent rejections of a device, so a maker can see why a value was dropped
 * (`GET /device/{id}/rejections`). Fed from the dead letters once they are durable; implemented by
 * the state store adapters (a `rejections` table beside the states).
 */
export interface RejectionRow {
  deviceId: string;
  /** Epoch ms of the rejection. */
  rejectedAt: number;
  code: string;
  reason: string;
  /** Empty when the rejection concerns the whole message. */
  asset: string;
  uplinkId: string;
  channel: string;
}

export interface RejectionStore {
  append(rows: readonly RejectionRow[]): Promise<void>;
  /** Newest first. A rejection appended twice (replay) is listed once. */
  recent(deviceId: string, options?: { limit?: number; before?: number }): Promise<RejectionRow[]>;
}
