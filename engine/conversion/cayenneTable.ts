/**
 * The Cayenne LPP type table (IPSO-based standard set plus the common extended types), shared by
 * the encoder in cayenne.ts, the generated decoder of emitCayenne.ts and the table loop the tests
 * hold it to (test/support/reference/cayenneReference.ts), with the messages they give for
 * malformed frames.
 */
import { internalize } from './codec.ts';
import { decodeFailed } from './readers.ts';

export interface LppField {
  /** Key in the decoded object, or '' for a single-value type. */
  readonly key: string;
  readonly bytes: number;
  readonly signed: boolean;
  /** Raw units per value unit (0.1 °C resolution → 10). */
  readonly scale: number;
}

export interface LppType {
  readonly id: number;
  readonly name: string;
  readonly fields: readonly LppField[];
  readonly size: number;
  /** `<name>_<channel>` per channel, made once: a canonical (internalized) key keeps stores fast. */
  readonly keys: string[];
}

const one = (bytes: number, signed: boolean, scale: number): LppField[] => [{ key: '', bytes, signed, scale }];
const xyz = (scale: number): LppField[] => ['x', 'y', 'z'].map((key) => ({ key, bytes: 2, signed: true, scale }));

const TABLE: Array<[number, string, LppField[]]> = [
  [0, 'digital_in', one(1, false, 1)],
  [1, 'digital_out', one(1, false, 1)],
  [2, 'analog_in', one(2, true, 100)],
  [3, 'analog_out', one(2, true, 100)],
  [100, 'generic_sensor', one(4, false, 1)],
  [101, 'luminosity', one(2, false, 1)],
  [102, 'presence', one(1, false, 1)],
  [103, 'temperature', one(2, true, 10)],
  [104, 'relative_humidity', one(1, false, 2)],
  [113, 'accelerometer', xyz(1000)],
  [115, 'barometric_pressure', one(2, false, 10)],
  [116, 'voltage', one(2, false, 100)],
  [117, 'current', one(2, false, 1000)],
  [118, 'frequency', one(4, false, 1)],
  [120, 'percentage', one(1, false, 1)],
  [121, 'altitude', one(2, true, 1)],
  [125, 'concentration', one(2, false, 1)],
  [128, 'power', one(2, false, 1)],
  [130, 'distance', one(4, false, 1000)],
  [131, 'energy', one(4, false, 1000)],
  [132, 'direction', one(2, false, 1)],
  [133, 'unixtime', one(4, false, 1)],
  [134, 'gyrometer', xyz(100)],
  [135, 'colour', ['r', 'g', 'b'].map((key) => ({ key, bytes: 1, signed: false, scale: 1 }))],
  [136, 'gps', [
    { key: 'latitude', bytes: 3, signed: true, scale: 10_000 },
    { key: 'longitude', bytes: 3, signed: true, scale: 10_000 },
    { key: 'altitude', bytes: 3, signed: true, scale: 100 },
  ]],
  [142, 'switch', one(1, false, 1)],
];

export const BY_ID = new Map<number, LppType>();
export const BY_NAME = new Map<string, LppType>();
for (const [id, name, fields] of TABLE) {
  const type = { id, name, fields, size: fields.reduce((n, f) => n + f.bytes, 0), keys: new Array<string>(256) };
  BY_ID.set(id, type);
  BY_NAME.set(name, type);
}

/** The LPP types this codec knows: id → asset name prefix. */
export const cayenneTypes: ReadonlyMap<number, string> = new Map(TABLE.map(([id, name]) => [id, name]));

/** `<name>_<channel>`, made once per type and channel: a canonical (internalized) key keeps stores fast. */
export function lppKey(type: LppType, channel: number): string {
  return type.keys[channel] ??= internalize(`${type.name}_${channel}`);
}

export function lppCutOff(at: number): Error {
  return decodeFailed(`Cayenne LPP: item at byte ${at} is cut off after its channel`);
}

export function lppUnknown(id: number, at: number): Error {
  return decodeFailed(`Cayenne LPP: unknown type ${id} at byte ${at}`);
}

export function lppShort(type: LppType, channel: number, left: number): Error {
  return decodeFailed(`Cayenne LPP: ${type.name} on channel ${channel} needs ${type.size} bytes, ${left} left`);
}
