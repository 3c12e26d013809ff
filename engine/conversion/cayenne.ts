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
import { BY_NAME, cayenneTypes, type LppField } from './cayenneTable.ts';
import { guardEncode, type Codec } from './codec.ts';
import { generatedCayenneDecoder } from './emitCayenne.ts';

export { cayenneTypes };

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

const encodeCayenne = guardEncode('Cayenne LPP', encode);

export const cayenneCodec: Codec = { decode: generatedCayenneDecoder(), encode: encodeCayenne };
