/**
 * fast-check generators for the conversion language: random field layouts that both sense and
 * actuate the same fields, and the decode contract every codec must keep on any bytes.
 */
import fc from 'fast-check';
import type { ConversionScript } from '../../schemas/conversion.ts';
import type { Codec, DecodeMeta } from '../../engine/conversion/codec.ts';
import { FleetError } from '../../engine/kernel/errors.ts';

/** Invertible calculations as real scripts write them. */
const INT_CALCS = [undefined, 'val / 10', 'val / 1000', 'val * 0.036 - 40', 'val * 0.5 - 20', '-val + 3', 'val / 3', '(val - 32) * 5 / 9', '100 - val', 'val + 1'];
/** Calculations that are exact on floats, so encoding gives the same bits back. */
const FLOAT_CALCS = [undefined, 'val * 2', '-val', 'val / 4'];

const order = fc.constantFrom('big', 'little', 'small');

const unit = fc.oneof(
  fc.record({ t: fc.constant('int' as const), length: fc.integer({ min: 1, max: 6 }), order, signed: fc.boolean(), calc: fc.constantFrom(...INT_CALCS) }),
  fc.record({ t: fc.constant('float' as const), length: fc.constantFrom(2, 4, 8), order, calc: fc.constantFrom(...FLOAT_CALCS), spelling: fc.constantFrom('float', 'number') }),
  fc.record({ t: fc.constant('bool' as const), length: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ t: fc.constantFrom('string' as const, 'hexstring' as const, 'hex' as const), length: fc.integer({ min: 1, max: 12 }), order }),
  fc.record({
    t: fc.constant('bits' as const),
    length: fc.integer({ min: 1, max: 6 }),
    order,
    cuts: fc.array(fc.record({ width: fc.integer({ min: 1, max: 12 }), kind: fc.constantFrom('boolean', 'integer', 'int'), skip: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 6 }),
  }),
);

export interface GeneratedLayout {
  script: ConversionScript;
  /** Payload length covered by the fields. */
  length: number;
  assets: string[];
}

/** Lays units out one after another; every field is sensed and actuated under the same asset. */
export const layoutArbitrary: fc.Arbitrary<GeneratedLayout> = fc.array(unit, { minLength: 1, maxLength: 8 }).map((units) => {
  const selectors: Array<[string, Record<string, unknown>]> = [];
  let offset = 0;
  for (const u of units) {
    const name = () => `f${selectors.length}`;
    if (u.t === 'int') {
      selectors.push([name(), { byte: offset, bytelength: u.length, byteorder: u.order, type: 'integer', signed: u.signed, ...(u.calc ? { calculation: u.calc } : {}) }]);
    } else if (u.t === 'float') {
      const type = u.spelling === 'number' && u.length !== 2 ? 'number' : 'float';
      selectors.push([name(), { byte: offset, bytelength: u.length, byteorder: u.order, type, ...(u.calc ? { calculation: u.calc } : {}) }]);
    } else if (u.t === 'bool') {
      selectors.push([name(), { byte: offset, bytelength: u.length, type: 'boolean' }]);
    } else if (u.t === 'bits') {
      let pos = 0;
      for (const cut of u.cuts) {
        const bit = pos + cut.skip;
        const width = Math.min(cut.width, u.length * 8 - bit);
        if (width < 1) break;
        selectors.push([name(), { byte: offset, bytelength: u.length, byteorder: u.order, bit, bitlength: width, type: cut.kind }]);
        pos = bit + width;
      }
    } else {
      selectors.push([name(), { byte: offset, bytelength: u.length, type: u.t, ...(u.t === 'string' ? {} : { byteorder: u.order }) }]);
    }
    offset += u.length;
  }
  return {
    script: {
      sense: selectors.map(([asset, value]) => ({ asset, value })),
      actuate: selectors.map(([asset, field]) => ({ asset, field })),
    } as ConversionScript,
    length: offset,
    assets: selectors.map(([a]) => a),
  };
});

/**
 * The decode contract: a plain JSON object, or FleetError DECODE_FAILED — never anything else.
 * Returns the state, or undefined when the bytes were rejected.
 */
export function decodeOrReject(codec: Codec, bytes: Uint8Array, meta?: DecodeMeta): Record<string, unknown> | undefined {
  let state: Record<string, unknown>;
  try {
    state = codec.decode(bytes, meta);
  } catch (error) {
    if (error instanceof FleetError && error.code === 'DECODE_FAILED' && typeof error.message === 'string') return undefined;
    throw new Error(`decode threw something other than DECODE_FAILED: ${String(error)}`, { cause: error });
  }
  if (typeof state !== 'object' || state === null || Array.isArray(state)) throw new Error('decode returned a non-object');
  assertJson(state, '$');
  return state;
}

function assertJson(value: unknown, path: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') { if (!Number.isFinite(value)) throw new Error(`${path} is ${value}`); return; }
  if (Array.isArray(value)) { value.forEach((v, i) => assertJson(v, `${path}[${i}]`)); return; }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) assertJson(v, `${path}.${k}`);
    return;
  }
  throw new Error(`${path} is not JSON: ${String(value)}`);
}
