/**
 * Conversion language benchmarks (not run by the test suite):
 *
 *   npx node bench/conversion.bench.ts [--fuzz=2000000] [--rounds=15]
 *
 * 1. A compiled script against a hand-written decoder of the same 12-byte, 6-field layout, in the
 *    same run: decodes/s of each and the ratio (target ≥ 0.8). Measured twice: with benny, and as
 *    interleaved rounds whose median ratio is robust to other load on the machine.
 *    Then again after 20 other device types were compiled and used in the same process.
 * 2. Decodes/s of the golden device-type scripts and the built-in formats.
 * 3. A long random-bytes fuzz of every golden script, generated layouts, Cayenne LPP and CBOR:
 *    anything thrown other than FleetError('DECODE_FAILED') aborts with the payload.
 */
import b from 'benny';
import fc from 'fast-check';
import { cayenneCodec } from '../engine/conversion/cayenne.ts';
import { cborCodec } from '../engine/conversion/cborCodec.ts';
import type { Codec } from '../engine/conversion/codec.ts';
import { compileScript } from '../engine/conversion/compileScript.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { layoutArbitrary } from '../test/support/conversionArbitraries.ts';
import { loadConversionFixtures, toHex } from '../test/support/conversionFixtures.ts';

const arg = (name: string, fallback: number) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.slice(name.length + 3)) : fallback;
};
const FUZZ = arg('fuzz', 2_000_000);
const ROUNDS = arg('rounds', 15);

// A seeded generator, so a fuzz failure can be replayed.
let seed = 0x2545f491;
const random = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 2 ** 32; };
const randomBytes = (max: number) => Uint8Array.from({ length: Math.floor(random() * (max + 1)) }, () => Math.floor(random() * 256));

// 1. compiled vs hand-written ---------------------------------------------------------------------

const script = {
  sense: [
    { asset: 'temperature', value: { byte: 0, bytelength: 2, type: 'integer', signed: true, calculation: 'val / 10' } },
    { asset: 'humidity', value: { byte: 2, type: 'integer' } },
    { asset: 'pressure', value: { byte: 3, bytelength: 2, type: 'integer', calculation: 'val / 10' } },
    { asset: 'battery', value: { byte: 5, bytelength: 2, byteorder: 'little', type: 'integer', calculation: 'val / 1000' } },
    { asset: 'counter', value: { byte: 7, bytelength: 4, type: 'integer' } },
    { asset: 'alarm', value: { byte: 11, bit: 0, type: 'boolean' } },
  ],
} as const;
const compiled = compileScript(script as never).decode;

/** What a developer would write by hand for the same layout, with the same error contract. */
function handWritten(bytes: Uint8Array): Record<string, unknown> {
  if (!(bytes instanceof Uint8Array) || bytes.length < 12) throw new FleetError('DECODE_FAILED', 'payload too short');
  return {
    temperature: (((bytes[0] << 24) >> 16) | bytes[1]) / 10,
    humidity: bytes[2],
    pressure: ((bytes[3] << 8) | bytes[4]) / 10,
    battery: ((bytes[6] << 8) | bytes[5]) / 1000,
    counter: bytes[7] * 0x1000000 + ((bytes[8] << 16) | (bytes[9] << 8) | bytes[10]),
    alarm: (bytes[11] & 1) !== 0,
  };
}

const payloads = Array.from({ length: 1024 }, () => Uint8Array.from({ length: 12 }, () => Math.floor(random() * 256)));
for (const p of payloads) {
  if (JSON.stringify(compiled(p)) !== JSON.stringify(handWritten(p))) throw new Error(`decoders disagree on ${toHex(p)}`);
}

// Results are kept, as a device actor keeps them, so neither decoder's object can be optimised away.
const sink: unknown[] = new Array(1024);
let at = 0;
const decodeWith = (decode: (p: Uint8Array) => unknown) => () => { sink[at & 1023] = decode(payloads[at & 1023]); at++; };

const summary = await b.suite(
  'conversion: 12-byte, 6-field payload',
  b.add('compiled script', decodeWith(compiled)),
  b.add('hand-written', decodeWith(handWritten)),
  b.cycle(),
  b.complete(),
);
const ops = Object.fromEntries(summary.results.map((r) => [r.name, r.ops]));
console.log(`benny: compiled ${fmt(ops['compiled script'])} decodes/s, hand-written ${fmt(ops['hand-written'])} decodes/s, ratio ${(ops['compiled script'] / ops['hand-written']).toFixed(3)}`);

function timed(decode: (p: Uint8Array) => unknown, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) sink[i & 1023] = decode(payloads[i & 1023]);
  return n / ((performance.now() - start) / 1000);
}

const ratios: number[] = [];
let bestCompiled = 0;
let bestHand = 0;
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which runs first, so a burst of load elsewhere hits both alike.
  const first = round % 2 === 0;
  const h1 = first ? 0 : timed(handWritten, 2_000_000);
  const c = timed(compiled, 2_000_000);
  const h = first ? timed(handWritten, 2_000_000) : h1;
  ratios.push(c / h);
  bestCompiled = Math.max(bestCompiled, c);
  bestHand = Math.max(bestHand, h);
}
ratios.sort((x, y) => x - y);
console.log(`interleaved (${ROUNDS} rounds × 2M decodes): best compiled ${fmt(bestCompiled)}/s, best hand-written ${fmt(bestHand)}/s, median ratio ${ratios[Math.floor(ratios.length / 2)].toFixed(3)} (min ${ratios[0].toFixed(3)}, max ${ratios[ratios.length - 1].toFixed(3)})`);

// The same script in a process that also decodes other device types: the shared closure sites
// of the compiler turn megamorphic, as they will in a fleet. Asset names are built at run time,
// as names parsed from stored scripts are.
const others = Array.from({ length: 20 }, (_, i) => compileScript({
  sense: script.sense.map((s, j) => ({ ...s, asset: `type${i}_${['t', 'h', 'p', 'b', 'c', 'a'][j]}` })),
} as never).decode);
for (const decode of others) for (let i = 0; i < 20_000; i++) sink[i & 1023] = decode(payloads[i & 1023]);
const fleetRatios: number[] = [];
let bestFleet = 0;
for (let round = 0; round < ROUNDS; round++) {
  const c = timed(compiled, 1_000_000);
  const h = timed(handWritten, 1_000_000);
  fleetRatios.push(c / h);
  bestFleet = Math.max(bestFleet, c);
}
fleetRatios.sort((x, y) => x - y);
console.log(`after 20 more device types were compiled and used: best compiled ${fmt(bestFleet)}/s, median ratio to hand-written ${fleetRatios[Math.floor(fleetRatios.length / 2)].toFixed(3)}`);

// 2. golden scripts and built-in formats -------------------------------------------------------------

const fixtures = loadConversionFixtures();
type Sample = [Uint8Array, { fPort: number } | undefined];
const codecs: Array<[string, Codec, Sample[]]> = fixtures.map((f) => {
  const samples = f.uplinks.filter((u) => !u.error)
    .map((u): Sample => [Uint8Array.from(Buffer.from(u.hex, 'hex')), u.fPort === undefined ? undefined : { fPort: u.fPort }]);
  return [f.file, compileScript(f.script), samples];
});
codecs.push(['cayenne', cayenneCodec, [[Uint8Array.from(Buffer.from('03670110056700ff018806765ff2960a0003e8', 'hex')), undefined]]]);
codecs.push(['cbor', cborCodec, [[cborCodec.encode!({ temperature: 21.5, humidity: 40, location: { latitude: 50.85, longitude: 4.35 } }), undefined]]]);
for (const [name, codec, samples] of codecs) {
  const n = 500_000;
  const start = performance.now();
  for (let i = 0; i < n; i++) { const [bytes, meta] = samples[i % samples.length]; sink[i & 1023] = codec.decode(bytes, meta); }
  console.log(`${name.padEnd(28)} ${fmt(n / ((performance.now() - start) / 1000))} decodes/s (${samples.length} recorded payloads in turn)`);
}

// 3. fuzz ---------------------------------------------------------------------------------------

const targets: Array<[string, Codec]> = codecs.map(([name, codec]) => [name, codec]);
for (const [i, layout] of fc.sample(layoutArbitrary, { numRuns: 200, seed: 42 }).entries()) targets.push([`layout-${i}`, compileScript(layout.script)]);
let decoded = 0;
let rejected = 0;
const fuzzStart = performance.now();
for (let i = 0; i < FUZZ; i++) {
  const [name, codec] = targets[i % targets.length];
  const bytes = randomBytes(random() < 0.8 ? 24 : 128);
  const fPort = random() < 0.5 ? undefined : Math.floor(random() * 4);
  try {
    codec.decode(bytes, fPort === undefined ? undefined : { fPort });
    decoded++;
  } catch (error) {
    if (!(error instanceof FleetError) || error.code !== 'DECODE_FAILED') {
      console.error(`FUZZ FAILURE: ${name} on ${toHex(bytes)} (fPort ${fPort}) threw`, error);
      process.exit(1);
    }
    rejected++;
  }
}
console.log(`fuzz: ${FUZZ.toLocaleString('en')} random payloads over ${targets.length} decoders in ${((performance.now() - fuzzStart) / 1000).toFixed(1)} s: ${decoded.toLocaleString('en')} decoded, ${rejected.toLocaleString('en')} DECODE_FAILED, nothing else thrown`);

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(1)} k`;
}
