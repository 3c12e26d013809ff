/**
 * What the live ring holds (LiveRing.ts): events read from topic `live`, and records held unread
 * while nobody subscribed, whose events are read only if a resume needs them.
 */
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { LiveKind, LiveState } from '../../schemas/live.ts';
import type { StateRow } from '../../schemas/messages.ts';
import type { LivePosition } from './liveCursor.ts';
import { ALL_KINDS, type HubEvent, type LiveFrame } from './liveTypes.ts';

/**
 * An event as the ring holds it. Most events reach no subscriber (nobody follows their device or
 * ground) and leave the ring unread, so what only a subscriber needs is built on first use: the
 * JSON (then the parsed data is let go), the cursor and the frame cache.
 */
export class HeldEvent implements HubEvent {
  readonly partition: number;
  readonly position: LivePosition;
  readonly kind: LiveKind;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  /** What the ring counts for this event, bytes. */
  readonly size: number;
  #data: unknown;
  #json: string | undefined;
  /** The other partitions' parts of the cursor, around this partition's. */
  readonly #prefix: string;
  readonly #suffix: string;
  #frames: Map<object, LiveFrame> | undefined;

  constructor(partition: number, position: LivePosition, kind: LiveKind, deviceId: string, groundId: string | undefined, data: unknown, size: number, prefix: string, suffix: string) {
    this.partition = partition;
    this.position = position;
    this.kind = kind;
    this.deviceId = deviceId;
    this.groundId = groundId;
    this.#data = data;
    this.size = size;
    this.#prefix = prefix;
    this.#suffix = suffix;
  }

  get json(): string {
    if (this.#json === undefined) {
      this.#json = JSON.stringify(this.#data);
      this.#data = undefined;
    }
    return this.#json;
  }

  get id(): string {
    const [offset, index] = this.position;
    return `${this.#prefix}${offset.toString(36)}.${(index + 1).toString(36)}${this.#suffix}`;
  }

  get frames(): Map<object, LiveFrame> {
    return (this.#frames ??= new Map());
  }

  dropFrames(): void {
    this.#frames = undefined;
  }
}

/** A record held unread (nobody subscribed when it came): its events are read only for a resume. */
export class HeldRecord {
  readonly partition: number;
  readonly offset: number;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  readonly value: Uint8Array;
  /** Its events, as its publisher counted them. */
  readonly count: number;
  readonly size: number;
  readonly #prefix: string;
  readonly #suffix: string;

  constructor(partition: number, offset: number, deviceId: string, groundId: string | undefined, value: Uint8Array, count: number, prefix: string, suffix: string) {
    this.partition = partition;
    this.offset = offset;
    this.deviceId = deviceId;
    this.groundId = groundId;
    this.value = value;
    this.count = count;
    this.size = value.byteLength;
    this.#prefix = prefix;
    this.#suffix = suffix;
  }

  /** Its events, as they would have been held (none when the record is not a live record after all). */
  events(onError: ((error: FleetError) => void) | undefined): HeldEvent[] {
    const events = decodeRecord(this.value, onError);
    return events === undefined ? [] : heldEvents(this.partition, this.offset, this.deviceId, this.groundId, events, this.size, this.#prefix, this.#suffix);
  }
}

export type Held = HeldEvent | HeldRecord;

/** A record's events as the ring holds them; each counts its share of the record's bytes (before, or without, its JSON). */
export function heldEvents(
  partition: number, offset: number, deviceId: string, groundId: string | undefined,
  events: [LiveKind, unknown][], bytes: number, prefix: string, suffix: string,
): HeldEvent[] {
  const size = Math.ceil(bytes / Math.max(events.length, 1));
  return events.map(([kind, data], index) => new HeldEvent(partition, [offset, index], kind, deviceId, groundId, data, size, prefix, suffix));
}

const decoder = new TextDecoder();
/** The head LivePublisher writes, `{"v":1,"n":<events>,"e":…`: the events of a record counted without reading it. */
const COUNTED_HEAD = /^\{"v":1,"n":([0-9]{1,9}),"e":/;
const HEAD_BYTES = 32;

/** A record's events; undefined (reported) when it is not a live record of version 1. */
export function decodeRecord(value: Uint8Array, onError: ((error: FleetError) => void) | undefined): [LiveKind, unknown][] | undefined {
  try {
    const parsed = JSON.parse(decoder.decode(value)) as { v?: unknown; e?: unknown };
    if (parsed.v !== 1 || !Array.isArray(parsed.e)) throw new Error(`not a live record of version 1`);
    return parsed.e.filter(isEvent);
  } catch (error) {
    // A record another writer put on the topic: skipped, the stream goes on.
    onError?.(toFleetError(error, 'VALIDATION_FAILED'));
    return undefined;
  }
}

/** The event count a record's head gives, or undefined (another writer's record: read it whole). */
export function countedEvents(value: Uint8Array): number | undefined {
  const match = COUNTED_HEAD.exec(decoder.decode(value.subarray(0, HEAD_BYTES)));
  return match === null ? undefined : Number(match[1]);
}

function isEvent(value: unknown): value is [LiveKind, unknown] {
  return Array.isArray(value) && value.length === 2 && ALL_KINDS.has(value[0] as LiveKind) && typeof value[1] === 'object' && value[1] !== null;
}

export function stateRowOf(state: LiveState): StateRow {
  return { deviceId: state.deviceId, asset: state.asset, ts: Date.parse(state.at), receivedAt: state.receivedAt, value: state.value as StateRow['value'], uplinkId: state.uplinkId };
}
