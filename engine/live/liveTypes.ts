/**
 * What the parts of an edge's live reader share (docs/live.md): an event as held and fanned out,
 * what a subscription follows and who opened it, and the subscriber the fan-out hands events to.
 */
import { LIVE_KINDS, type LiveKind } from '../../schemas/live.ts';
import type { LivePosition } from './liveCursor.ts';

/** One event as held and fanned out: its data serialised once for every subscriber. */
export interface HubEvent {
  readonly partition: number;
  readonly position: LivePosition;
  readonly kind: LiveKind;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  readonly json: string;
  /** The cursor just after this event. */
  readonly id: string;
  /** Wire frames built once per event and format during its fan-out, shared by every subscriber (LiveSubscription). */
  readonly frames: Map<object, LiveFrame>;
}

export interface LiveFilter {
  deviceId?: string;
  groundId?: string;
  kinds: ReadonlySet<LiveKind>;
}

/** Who opened a subscription, so registry changes can end it (engine/ports/registryChanges.ts). */
export interface LiveOwner {
  /** The user or device id of the token. */
  subjectId: string;
  /** engine/access/tokens.ts hashToken of the token. */
  tokenHash: string;
  /** The ground the access was granted through: the ground streamed, or the ground of the device streamed. */
  groundId: string;
  /** When the token expires (a ground's API key, epoch ms): the subscription ends then. */
  expiresAt?: number;
}

export interface LiveSubscriber {
  /** false: the subscriber is gone (overflowed or closed) and must not be called again. */
  send(event: HubEvent): boolean;
  /** The resume point is gone: the client reloads from the REST API, live events follow. */
  reset(): void;
  /** The server ends the stream: shutting down, or access withdrawn. */
  close(reason: LiveCloseReason): void;
}

export type LiveCloseReason = 'overflow' | 'closing' | 'forbidden';

/**
 * A frame as written: text (SSE joins frames into one string), or the bytes of a WebSocket text
 * message, encoded once per event rather than once per subscriber.
 */
export type LiveFrame = string | Uint8Array;

export const ALL_KINDS: ReadonlySet<LiveKind> = new Set(LIVE_KINDS);
