/**
 * An uplink a connection has read and not yet answered (handleUplink.ts), and the acknowledgement
 * it owes the client: connections keep both in arrival order (EdgeConnection.ts acks and uplinks).
 */
import type { InboundPublish } from './publishCodec.ts';

/** An acknowledgement owed to the client, written when ready and every earlier one was. */
export interface AckSlot {
  packetId: number;
  ready: boolean;
  /** Written or abandoned (the connection closed). */
  done: boolean;
  /** The packet to write; a plain PUBACK when absent. */
  packet?: Buffer;
}

export interface PendingUplink {
  publish: InboundPublish;
  slot: AckSlot | undefined;
  /** The device was read again after a refusal that a newer copy might not make. */
  refreshed: boolean;
}
