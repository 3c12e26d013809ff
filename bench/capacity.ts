/**
 * Capacity model: how many machines each tier needs for a fleet, from the costs the benches measured
 * on this machine (bench/support/costs.ts, `.cache/bench/costs.json`). Not a bench itself: run the
 * benches it names first, then
 *
 *   node bench/capacity.ts [machineCores=8] [machineGiB=32] [utilisation=0.6] [secondsBetweenReports=10]
 *
 * Every device reports once every `secondsBetweenReports` (one uplink of 4 data points, the benches'
 * shape) and holds one MQTT connection. A tier needs the larger of what its CPU and its memory ask,
 * each machine used up to `utilisation` (headroom for bursts, rebalances and a machine lost). The
 * broker line counts broker cores for one copy of each record; multiply by the replication factor.
 */
import { readCosts, type CostName, COSTS_FILE } from './support/costs.ts';

const CORES = Number(process.argv[2] ?? 8);
const GIB = Number(process.argv[3] ?? 32);
const UTILISATION = Number(process.argv[4] ?? 0.6);
const EVERY_S = Number(process.argv[5] ?? 10);
const POINTS_PER_UPLINK = 4;
const FLEETS = [100_000, 1_000_000, 10_000_000];
/** A process's own memory before it holds any device (runtime, clients, caches), bytes. */
const BASE_BYTES = 150 * 2 ** 20;

const costs = readCosts();
const sources: Record<CostName, string> = {
  edgeHttpCpuMicros: 'bench/scale.bench.ts',
  edgeMqttCpuMicros: 'bench/scale.bench.ts',
  engineCpuMicros: 'bench/distributed.bench.ts',
  brokerCpuMicros: 'bench/distributed.bench.ts',
  storeRowsPerCoreSecond: 'bench/distributed.bench.ts',
  edgeBytesPerConnection: 'bench/mqtt.bench.ts',
  engineBytesPerActor: 'bench/actors-memory.bench.ts',
  ownerBytesPerDevice: 'bench/actors-memory.bench.ts',
};
const missing = (Object.keys(sources) as CostName[]).filter((name) => costs[name] === undefined);
const cost = (name: CostName) => costs[name]?.value;

/** Machines for `cores` of CPU and `bytes` of memory; undefined when a cost is unknown. */
function machines(cores: number | undefined, bytes: number | undefined): number | undefined {
  if (cores === undefined || bytes === undefined) return undefined;
  return Math.max(1, Math.ceil(cores / (CORES * UTILISATION)), Math.ceil(bytes / (GIB * 2 ** 30 * UTILISATION)));
}

const times = (micros: number | undefined, perSecond: number) => (micros === undefined ? undefined : (micros * perSecond) / 1e6);
const cell = (n: number | undefined, extra = '') => (n === undefined ? '?' : `${n.toLocaleString('en-US')}${extra}`);

console.log(`Capacity for fleets reporting every ${EVERY_S} s (${POINTS_PER_UPLINK} data points per report), machines of ${CORES} cores and ${GIB} GiB used to ${Math.round(UTILISATION * 100)} %`);
console.log(`costs from ${COSTS_FILE}:`);
for (const name of Object.keys(sources) as CostName[]) {
  const c = costs[name];
  console.log(`  ${name.padEnd(24)} ${c === undefined ? `unknown: run ${sources[name]}` : `${Number(c.value.toPrecision(4)).toLocaleString('en-US')}  (${c.by}, ${c.at})`}`);
}
console.log('');
const rows: string[][] = [['devices', 'reports/s', 'edges (MQTT)', 'edges (HTTP)', 'engines', 'broker cores', 'ClickHouse servers']];
for (const devices of FLEETS) {
  const perSecond = devices / EVERY_S;
  const connections = (b: number | undefined) => (b === undefined ? undefined : BASE_BYTES + b * devices);
  const mqttEdges = machines(times(cost('edgeMqttCpuMicros'), perSecond), connections(cost('edgeBytesPerConnection')));
  const httpEdges = machines(times(cost('edgeHttpCpuMicros'), perSecond), BASE_BYTES);
  const ownerBytes = cost('ownerBytesPerDevice');
  const engines = machines(times(cost('engineCpuMicros'), perSecond), ownerBytes === undefined ? undefined : BASE_BYTES + ownerBytes * devices);
  const broker = times(cost('brokerCpuMicros'), perSecond);
  const store = cost('storeRowsPerCoreSecond');
  const servers = store === undefined ? undefined : Math.max(1, Math.ceil((perSecond * POINTS_PER_UPLINK) / (store * CORES * UTILISATION)));
  rows.push([cell(devices), cell(perSecond), cell(mqttEdges), cell(httpEdges), cell(engines), broker === undefined ? '?' : broker.toFixed(1), cell(servers)]);
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
for (const row of rows) console.log(row.map((c, i) => c.padStart(widths[i])).join('  '));
if (missing.length > 0) console.log(`\n? = not measured yet: run ${[...new Set(missing.map((m) => sources[m]))].join(', ')}`);
console.log('\nEngine memory above holds the command owners\' connectivity; device actors live only for devices whose records carry no decision ' +
  `(${cost('engineBytesPerActor') === undefined ? '?' : Math.round(cost('engineBytesPerActor')!)} bytes each while live).`);
