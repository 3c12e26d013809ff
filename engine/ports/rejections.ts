/**
 * Recent rejections of a device, so a maker can see why a value was dropped
 * (`GET /device/{id}/rejections`). Fed from the dead letters once they are durable, and with the
 * command records the command pipeline refused (channel `command`); implemented by the state store
 * adapters (a `rejections` table beside the states), which pass test/contracts/rejections.contract.ts.
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
  /**
   * The batch item (index in the uplink's array of device states) the rejection concerns; absent
   * when it concerns none. Refusals of one code and asset in different items are different rows.
   */
  item?: number;
  /** The uplink's channel (http, mqtt, lpwan), or `command` for a refused command record. */
  channel: string;
}

export interface RejectionQuery {
  /** Most rows returned. Default 50. */
  limit?: number;
  /** Only rows rejected before this epoch ms (paging). */
  before?: number;
  /**
   * Only rows of these channels. The limit applies after it, so refusals of one channel never
   * push those of another out of a page. Default: every channel.
   */
  channels?: readonly string[];
}

export interface RejectionStore {
  append(rows: readonly RejectionRow[]): Promise<void>;
  /**
   * Newest first (by rejection time, then uplink id, descending), then a row of no item before
   * those of items, in item order, then by code and asset. A rejection appended twice (replay) is
   * listed once.
   */
  recent(deviceId: string, options?: RejectionQuery): Promise<RejectionRow[]>;
}
