/**
 * Conversion language benchmarks (not run by the test suite):
 *
 *   npx node bench/conversion.bench.ts [--fuzz=2000000] [--rounds=15] [--types=100]
 *
 * Every figure is a ratio against a baseline measured in the same run: a hand-written decoder of
 * the same 12-byte, 6-field layout, and the closure compiler (test/support/reference, the reference the
 * generated code replaced in codecFor).
 * 1. One device type: generated code, closures and hand-written, with benny and as interleaved
 *    rounds timed in CPU time, whose median ratio is robust to other load on the machine
 *    (target ≥ 0.9).
 * 2. 100 device types loaded and used in turn between rounds (target ≥ 0.8), and a mixed fleet:
 *    decodes/s over all the types round robin.
 * 3. Compile time and heap per type, generated against closures.
 * 4. Decodes/s of the golden device-type scripts and the built-in formats, generated against
 *    closures (Cayenne LPP: against its table loop); encodes/s of the golden commands.
 * 5. A long random-bytes fuzz of every golden script, generated layouts, Cayenne LPP and CBOR:
 *    anything thrown other than FleetError('DECODE_FAILED') aborts with the payload.
 */
import b from 'benny';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { cayenneCodec } from '../engine/conversion/cayenne.ts';
import { cayenneReference } from '../test/support/reference/cayenneReference.ts';
import { cborCodec } from '../engine/conversion/cborCodec.ts';
import type { Codec, DecodeMeta } from '../engine/conversion/codec.ts';
import { compiledTypeStats } from '../engine/conversion/codecCache.ts';
import { codecFor } from '../engine/conversion/codecFor.ts';
import { compileScript } from '../test/support/reference/compileScript.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import type { ConversionScript } from '../schemas/conversion.ts';
import { layoutArbitrary } from '../test/support/conversionArbitraries.ts';
import { loadConversionFixtures, toHex } from '../test/support/conversionFixtures.ts';

const arg = (name: string, fallback: number) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.slice(name.length + 3)) : fallback;
};
const FUZZ = arg('fuzz', 2_000_000);
const ROUNDS = arg('rounds', 15);
const TYPES = arg('types', 100);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// A seeded generator, so a fuzz failure can be replayed.
let seed = 0x2545f491;
const random = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 2 ** 32; };
const randomBytes = (max: number) => Uint8Array.from({ length: Math.floor(random() * (max + 1)) }, () => Math.floor(random() * 256));
const generated = (script: unknown) => codecFor({ format: 'binary', conversion: script as never })!;
type Decode = (bytes: Uint8Array, meta: DecodeMeta) => unknown;
/**
 * Every decoder is called as the uplink pipeline calls it, `decoder(bytes, meta)`
 * (engine/uplink/admission/processUplink.ts), and the hand-written one takes the same two
 * parameters: in V8 a call with fewer arguments than the callee declares takes a slower path, so
 * calling a two-parameter codec with one argument would measure the call, not the decoder.
 */
const meta: DecodeMeta = { fPort: 1 };

// 1. one device type ----------------------------------------------------------------------------

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
const fast: Decode = generated(script).decode;
const closures: Decode = compileScript(script as never).decode;

/** What a developer would write by hand for the same layout, with the same error contract. */
function handWritten(bytes: Uint8Array, _meta?: DecodeMeta): Record<string, unknown> {
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
  const want = JSON.stringify(handWritten(p, meta));
  if (JSON.stringify(fast(p, meta)) !== want || JSON.stringify(closures(p, meta)) !== want) throw new Error(`decoders disagree on ${toHex(p)}`);
}

// Results are kept, as a device actor keeps them, so no decoder's object can be optimised away.
const sink: unknown[] = new Array(1024);
let at = 0;
const decodeWith = (decode: Decode) => () => { sink[at & 1023] = decode(payloads[at & 1023], meta); at++; };

const summary = await b.suite(
  'conversion: 12-byte, 6-field payload',
  b.add('generated', decodeWith(fast)),
  b.add('closures', decodeWith(closures)),
  b.add('hand-written', decodeWith(handWritten)),
  b.cycle(),
  b.complete(),
);
const ops = Object.fromEntries(summary.results.map((r) => [r.name, r.ops]));
console.log(`benny: generated ${fmt(ops.generated)} decodes/s (${ratio(ops.generated, ops['hand-written'])} of hand-written), closures ${fmt(ops.closures)} (${ratio(ops.closures, ops['hand-written'])}), hand-written ${fmt(ops['hand-written'])}`);

/**
 * Rates are per second of this process's CPU time rather than wall time: on a shared machine other
 * processes' load stretches wall time at random, CPU time much less (benny above is wall time).
 */
function timed(decode: Decode, n: number): number {
  return perCpuSecond(n, () => { for (let i = 0; i < n; i++) sink[i & 1023] = decode(payloads[i & 1023], meta); });
}

/** `n` operations done by `run`, per second of this process's CPU time. */
function perCpuSecond(n: number, run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return n / ((used.user + used.system) / 1e6);
}

/**
 * Ratio of `decode` to hand-written over interleaved rounds: the median of the rounds' ratios, and
 * the ratio of each one's best round (the least disturbed by other load on a shared machine).
 * `between` runs before each round (the other device types of a fleet). Alternating which runs
 * first spreads load bursts over both.
 */
function rounds(label: string, decode: Decode, n: number, between = () => {}): number {
  const ratios: number[] = [];
  let best = 0;
  let bestHand = 0;
  for (let round = 0; round < ROUNDS; round++) {
    between();
    const first = round % 2 === 0;
    const h1 = first ? 0 : timed(handWritten, n);
    const c = timed(decode, n);
    const h = first ? timed(handWritten, n) : h1;
    ratios.push(c / h);
    best = Math.max(best, c);
    bestHand = Math.max(bestHand, h);
  }
  ratios.sort((x, y) => x - y);
  const median = ratios[Math.floor(ratios.length / 2)];
  console.log(`${label.padEnd(44)} median ratio to hand-written ${median.toFixed(3)} (min ${ratios[0].toFixed(3)}, max ${ratios[ratios.length - 1].toFixed(3)}); `
    + `best ${fmt(best)}/s vs ${fmt(bestHand)}/s, ratio ${ratio(best, bestHand)}`);
  return median;
}

rounds('one type, generated', fast, 2_000_000);
rounds('one type, closures', closures, 2_000_000);

// 2, 3. a fleet of device types: compile time and heap, interleaved and mixed decoding -----------

/**
 * TYPES other device types: variants of the layout above (other asset names and scales, as
 * vendors' firmware versions differ) and generated layouts of every field kind. Asset names are
 * built at run time, as names parsed from stored scripts are. Each gets a payload it decodes.
 */
interface FleetType { script: ConversionScript; payload: Uint8Array }
const layouts = fc.sample(layoutArbitrary, { numRuns: TYPES, seed: 7 });
const fleet: FleetType[] = Array.from({ length: TYPES }, (_, i) => {
  if (i % 2 === 0) {
    const variant = { sense: script.sense.map((s, j) => ({ asset: `type${i}_${['t', 'h', 'p', 'b', 'c', 'a'][j]}`, value: 'calculation' in s.value ? { ...s.value, calculation: `val / ${10 + i}` } : s.value })) };
    return { script: variant as never, payload: payloads[i] };
  }
  const layout = layouts[i].script;
  const check = compileScript(layout);
  let payload = new Uint8Array(layouts[i].length);
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = Uint8Array.from({ length: layouts[i].length }, () => Math.floor(random() * 256));
    try { check.decode(candidate, meta); payload = candidate; break; } catch { /* try other bytes */ }
  }
  return { script: layout, payload };
});

/** Compiles the fleet, reporting compile time and heap per type against a baseline compiler. */
function load(label: string, compile: (script: ConversionScript) => Codec): { decoders: Decode[]; ms: number; heap: number } {
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let codecs: Codec[] = [];
  const ms = 1000 / perCpuSecond(TYPES, () => { codecs = fleet.map((t) => compile(t.script)); });
  const decoders = codecs.map((c) => c.decode as Decode);
  // Used once each, so the heap holds what a running type holds (bytecode, feedback).
  for (let i = 0; i < TYPES; i++) for (let k = 0; k < 200; k++) sink[k] = decoders[i](fleet[i].payload, meta);
  gc();
  const heap = (process.memoryUsage().heapUsed - heapBefore) / TYPES;
  console.log(`${label.padEnd(44)} compile ${ms.toFixed(3)} ms/type, heap ${(heap / 1024).toFixed(1)} KiB/type`);
  return { decoders, ms, heap };
}

const statsBefore = compiledTypeStats();
const viaCodecFor = load(`${TYPES} types, generated`, generated);
const statsAfter = compiledTypeStats();
const viaClosures = load(`${TYPES} types, closures`, compileScript);
console.log(`generated/closures: compile time ${ratio(viaCodecFor.ms, viaClosures.ms)}, heap ${ratio(viaCodecFor.heap, viaClosures.heap)}; `
  + `codecCache: ${statsAfter.compiled - statsBefore.compiled} types compiled, ${((statsAfter.compileMs - statsBefore.compileMs) / TYPES).toFixed(3)} ms and ${((statsAfter.sourceChars - statsBefore.sourceChars) / TYPES).toFixed(0)} source characters each`);

/** Every type of the fleet decodes a while, in turn: the process a fleet really runs in. */
const useFleet = (decoders: Decode[]) => () => {
  for (let k = 0; k < 20; k++) for (let i = 0; i < TYPES; i++) sink[i] = decoders[i](fleet[i].payload, meta);
};
const fleetFast = rounds(`${TYPES} types loaded and interleaved, generated`, fast, 1_000_000, useFleet(viaCodecFor.decoders));
const fleetClosures = rounds(`${TYPES} types loaded and interleaved, closures`, closures, 1_000_000, useFleet(viaClosures.decoders));
console.log(`with ${TYPES} types, generated/closures ${ratio(fleetFast, fleetClosures)}`);

function mixed(decoders: Decode[]): number {
  let best = 0;
  for (let round = 0; round < 5; round++) {
    best = Math.max(best, perCpuSecond(2_000 * TYPES, () => { for (let k = 0; k < 2_000; k++) for (let i = 0; i < TYPES; i++) sink[i] = decoders[i](fleet[i].payload, meta); }));
  }
  return best;
}
const mixedFast = mixed(viaCodecFor.decoders);
const mixedClosures = mixed(viaClosures.decoders);
const handRate = timed(handWritten, 2_000_000);
console.log(`mixed fleet of ${TYPES} types round robin: generated ${fmt(mixedFast)} decodes/s, closures ${fmt(mixedClosures)} decodes/s `
  + `(generated/closures ${ratio(mixedFast, mixedClosures)}; generated ${ratio(mixedFast, handRate)} of one hand-written type at ${fmt(handRate)}/s)`);

// 4. golden scripts and built-in formats ------------------------------------------------------------

const fixtures = loadConversionFixtures();
type Sample = [Uint8Array, { fPort: number } | undefined];
const codecs: Array<[string, Codec, Sample[], Codec | undefined]> = fixtures.map((f) => {
  const samples = f.uplinks.filter((u) => !u.error)
    .map((u): Sample => [Uint8Array.from(Buffer.from(u.hex, 'hex')), u.fPort === undefined ? undefined : { fPort: u.fPort }]);
  return [f.file, generated(f.script), samples, compileScript(f.script)];
});
codecs.push(['cayenne', cayenneCodec, [[Uint8Array.from(Buffer.from('03670110056700ff018806765ff2960a0003e8', 'hex')), undefined]], cayenneReference]);
codecs.push(['cbor', cborCodec, [[cborCodec.encode!({ temperature: 21.5, humidity: 40, location: { latitude: 50.85, longitude: 4.35 } }), undefined]], undefined]);
function rate(codec: Codec, samples: Sample[]): number {
  const n = 500_000;
  return perCpuSecond(n, () => { for (let i = 0; i < n; i++) { const [bytes, m] = samples[i % samples.length]; sink[i & 1023] = codec.decode(bytes, m); } });
}
for (const [name, codec, samples, reference] of codecs) {
  const fastRate = rate(codec, samples);
  const referenceRate = reference ? rate(reference, samples) : 0;
  const baseline = reference ? ` (${name === 'cayenne' ? 'table loop' : 'closures'} ${fmt(referenceRate)}/s, ratio ${ratio(fastRate, referenceRate)})` : '';
  console.log(`${name.padEnd(28)} ${fmt(fastRate)} decodes/s${baseline}, ${samples.length} recorded payloads in turn`);
}

const commands = fixtures.filter((f) => f.downlinks?.some((d) => !d.error));
for (const f of commands) {
  const samples = f.downlinks!.filter((d) => !d.error).map((d) => d.command);
  const encodeRate = (codec: Codec) => {
    const n = 300_000;
    return perCpuSecond(n, () => { for (let i = 0; i < n; i++) sink[i & 1023] = codec.encode!(samples[i % samples.length]); });
  };
  const fastRate = encodeRate(generated(f.script));
  const closureRate = encodeRate(compileScript(f.script));
  console.log(`${`${f.file} encode`.padEnd(28)} ${fmt(fastRate)} encodes/s (closures ${fmt(closureRate)}/s, ratio ${ratio(fastRate, closureRate)})`);
}

// 5. fuzz ---------------------------------------------------------------------------------------

const targets: Array<[string, Codec]> = codecs.map(([name, codec]) => [name, codec]);
for (const [i, layout] of fc.sample(layoutArbitrary, { numRuns: 200, seed: 42 }).entries()) targets.push([`layout-${i}`, generated(layout.script)]);
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

function ratio(x: number, y: number): string {
  return `${(x / y).toFixed(3)}×`;
}
