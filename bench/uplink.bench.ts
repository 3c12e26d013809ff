/**
 * Uplink hot path (engine/uplink/admission/processUplink.ts): decode + validate + timestamp of one device
 * state with 4 assets, per uplink. Not part of the test suite.
 *
 *   npx node bench/uplink.bench.ts
 *
 * Baselines measured in the same run: bare JSON.parse of the same JSON text (already a string),
 * and cbor-x's decode of the same CBOR bytes, so each figure reads as a ratio of what parsing
 * alone costs.
 *
 * And the decision behind admission once (engine/uplink/admission/admitUplink.ts): carrying what the
 * edge decided on the log costs encoding it there and reading it back in the engine — against the
 * engine admitting the body again, as it did before. Both include the envelope's own encode/decode.
 */
import b from 'benny';
import { Decoder, Encoder } from 'cbor-x';
import { compileDevice } from '../engine/uplink/admission/compileDevice.ts';
import { processUplink, type UplinkOutput } from '../engine/uplink/admission/processUplink.ts';
import type { UplinkEnvelope } from '../schemas/messages.ts';
import { admitUplink, carried, outputOf } from '../engine/uplink/admission/admitUplink.ts';
import { decodeEnvelope, encodeEnvelope } from '../engine/uplink/envelope.ts';

const device = compileDevice({
  id: 'dev-1',
  assets: [
    { id: 'a1', name: 'temperature', is: 'sensor', profile: { type: 'number', unit: '°C', minimum: -40, maximum: 85 } },
    { id: 'a2', name: 'humidity', is: 'sensor', profile: { type: 'integer', unit: '%', minimum: 0, maximum: 100 } },
    { id: 'a3', name: 'door', is: 'sensor', profile: { type: 'boolean' } },
    {
      id: 'a4', name: 'location', is: 'sensor',
      profile: { type: 'object', required: ['latitude', 'longitude'], properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } },
    },
  ],
});

const jsonText = JSON.stringify({
  temperature: { value: 21.5, at: '2024-05-01T12:00:00.250Z' },
  humidity: { value: 55 },
  door: { value: true },
  location: { value: { latitude: 51.0543, longitude: 3.7174 } },
});
const jsonBody = new TextEncoder().encode(jsonText);
// The same state in CBOR as a constrained device sends it: simplified form, one full-form entry with `at`.
const cborBody = new Uint8Array(new Encoder({ useRecords: false } as ConstructorParameters<typeof Encoder>[0]).encode({
  temperature: { value: 21.5, at: '2024-05-01T12:00:00.250Z' },
  humidity: 55,
  door: true,
  location: { latitude: 51.0543, longitude: 3.7174 },
}));
const cborX = new Decoder({ useRecords: false } as ConstructorParameters<typeof Decoder>[0]);

function envelope(body: Uint8Array, contentType: 'json' | 'cbor'): UplinkEnvelope {
  return { id: 'up-1', channel: 'http', contentType, deviceId: 'dev-1', receivedAt: 1_714_564_800_000, body };
}
const jsonEnv = envelope(jsonBody, 'json');
const cborEnv = envelope(cborBody, 'cbor');
const out: UplinkOutput = { rows: [], rejections: [] };

// Each case must give 4 rows and no rejection, or the numbers measure the wrong thing.
for (const env of [jsonEnv, cborEnv]) {
  processUplink(env, device, out);
  if (out.rows.length !== 4 || out.rejections.length !== 0) throw new Error(`bench setup: ${JSON.stringify(out)}`);
  out.rows.length = 0;
}

let sink: unknown;
const summary = await b.suite(
  `uplink: JSON ${jsonBody.length} B / CBOR ${cborBody.length} B device state, 4 assets`,
  b.add('JSON.parse of the same text (baseline)', () => {
    sink = JSON.parse(jsonText);
  }),
  b.add('json device state: decode + validate + timestamp', () => {
    processUplink(jsonEnv, device, out);
    out.rows.length = 0;
  }),
  b.add('cbor-x decode of the same CBOR (reference)', () => {
    sink = cborX.decode(cborBody);
  }),
  b.add('cbor device state: decode + validate + timestamp', () => {
    processUplink(cborEnv, device, out);
    out.rows.length = 0;
  }),
  b.add('engine, carried: envelope with the admitted states encoded, decoded, rows rebuilt', () => {
    const admission = admitUplink(jsonEnv, device);
    if (admission.verdict !== 'accepted') throw new Error('refused');
    const read = decodeEnvelope(encodeEnvelope({ ...jsonEnv, admitted: carried(admission) }));
    sink = outputOf(read as Parameters<typeof outputOf>[0]);
  }),
  b.add('engine, repeated: envelope without them encoded, decoded, body admitted again', () => {
    const admission = admitUplink(jsonEnv, device);
    if (admission.verdict !== 'accepted') throw new Error('refused');
    sink = admitUplink(decodeEnvelope(encodeEnvelope(jsonEnv)), device);
  }),
);
void sink;

const ops = new Map(summary.results.map((r) => [r.name, r.ops]));
const baseline = ops.get('JSON.parse of the same text (baseline)')!;
console.log('\nops/s and ratio to bare JSON.parse (same run):');
for (const r of summary.results) {
  console.log(`  ${r.name.padEnd(52)} ${Math.round(r.ops).toLocaleString('en-US').padStart(12)} ops/s ±${r.margin.toFixed(1)}%  ${(r.ops / baseline).toFixed(2)}×`);
}
const carriedOps = ops.get('engine, carried: envelope with the admitted states encoded, decoded, rows rebuilt')!;
const repeatedOps = ops.get('engine, repeated: envelope without them encoded, decoded, body admitted again')!;
console.log(`\nadmitted once and carried / admitted again in the engine (edge admission included in both): ${(carriedOps / repeatedOps).toFixed(2)}×`);
