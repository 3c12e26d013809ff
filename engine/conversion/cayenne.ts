/**
 * Cayenne LPP, a built-in format beside custom scripts (DESIGN.md §7). A frame is a sequence of
 * `channel, type, value` items, values big-endian at the type's resolution. Assets are named like
 * The Things Stack names them, `<type>_<channel>` (`temperature_3`, `gps_1` → {latitude,
 * longitude, altitude}). Encoding writes the same item format, so a command
 * `{"digital_out_4": 1}` becomes `04 01 01`. Types: the IPSO-based standard set plus the common
 * extended ones (generic sensor, voltage, current, frequency, percentage, altitude, concentration,
 * power, distance, energy, direction, unix time, colour, switch).
 */
import { FleetError } from '../kernel/errors.ts';
import { guardDecode, guardEncode, type Codec } from './codec.ts';
import { decodeFailed, readUint } from './readers.ts';

interface LppField {
  /** Key in the decoded object, or '' for a single-value type. */
  readonly key: string;
  readonly bytes: number;
  readonly signed: boolean;
  /** Raw units per value unit (0.1 °C resolution → 10). */
  readonly scale: number;
}

interface LppType {
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

const BY_ID = new Map<number, LppType>();
const BY_NAME = new Map<string, LppType>();
for (const [id, name, fields] of TABLE) {
  const type = { id, name, fields, size: fields.reduce((n, f) => n + f.bytes, 0), keys: new Array<string>(256) };
  BY_ID.set(id, type);
  BY_NAME.set(name, type);
}

/** The LPP types this codec knows: id → asset name prefix. */
export const cayenneTypes: ReadonlyMap<number, string> = new Map(TABLE.map(([id, name]) => [id, name]));

function readField(b: Uint8Array, o: number, f: LppField): number {
  let v = readUint(b, o, f.bytes, false);
  if (f.signed && v >= 2 ** (f.bytes * 8 - 1)) v -= 2 ** (f.bytes * 8);
  return v / f.scale;
}

function decode(b: Uint8Array): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let i = 0;
  while (i < b.length) {
    if (i + 2 > b.length) throw decodeFailed(`Cayenne LPP: item at byte ${i} is cut off after its channel`);
    const channel = b[i];
    const type = BY_ID.get(b[i + 1]);
    if (!type) throw decodeFailed(`Cayenne LPP: unknown type ${b[i + 1]} at byte ${i + 1}`);
    i += 2;
    if (i + type.size > b.length) throw decodeFailed(`Cayenne LPP: ${type.name} on channel ${channel} needs ${type.size} bytes, ${b.length - i} left`);
    let value: unknown;
    if (type.fields.length === 1) {
      value = readField(b, i, type.fields[0]);
    } else {
      const o: Record<string, number> = {};
      let at = i;
      for (const f of type.fields) { o[f.key] = readField(b, at, f); at += f.bytes; }
      value = o;
    }
    // A repeated channel and type overwrites the earlier item: the later one is the newer reading.
    out[type.keys[channel] ??= Object.keys({ [`${type.name}_${channel}`]: 0 })[0]] = value;
    i += type.size;
  }
  return out;
}

function invalid(message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `Cayenne LPP: ${message}`);
}

function writeField(buf: number[], key: string, f: LppField, value: unknown): void {
  const v = typeof value === 'boolean' ? (value ? 1 : 0) : value;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${key} needs a finite number`);
  const scaled = v * f.scale;
  const raw = scaled < 0 ? -Math.round(-scaled) : Math.round(scaled);
  const bits = f.bytes * 8;
  const min = f.signed ? -(2 ** (bits - 1)) : 0;
  const max = f.signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  if (raw < min || raw > max) throw invalid(`${key} = ${v} is out of range (${min / f.scale}..${max / f.scale})`);
  let u = raw < 0 ? raw + 2 ** bits : raw;
  const bytes: number[] = [];
  for (let i = 0; i < f.bytes; i++) { bytes.unshift(u % 256); u = Math.floor(u / 256); }
  buf.push(...bytes);
}

function encode(command: Record<string, unknown>): Uint8Array {
  const buf: number[] = [];
  for (const [key, value] of Object.entries(command)) {
    const m = /^([a-z_]+)_(\d{1,3})$/.exec(key);
    const type = m ? BY_NAME.get(m[1]) : undefined;
    const channel = m ? Number(m[2]) : NaN;
    if (!type || !(channel <= 255)) throw invalid(`'${key}' is not <type>_<channel> with a known type and a channel 0..255`);
    buf.push(channel, type.id);
    if (type.fields.length === 1) {
      writeField(buf, key, type.fields[0], value);
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw invalid(`${key} needs an object with ${type.fields.map((f) => f.key).join(', ')}`);
    }
    const o = value as Record<string, unknown>;
    for (const f of type.fields) writeField(buf, `${key}.${f.key}`, f, Object.hasOwn(o, f.key) ? o[f.key] : undefined);
  }
  return Uint8Array.from(buf);
}

export const cayenneCodec: Codec = {
  decode: guardDecode('Cayenne LPP', decode),
  encode: guardEncode('Cayenne LPP', encode),
};
