/**
 * Measured costs that bench/capacity.ts turns into machines per tier: each bench that measures one
 * records it here (`.cache/bench/costs.json`, beside the project's other local caches), with what
 * measured it and when. A later run of the same bench replaces its figures.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const COSTS_FILE = join(new URL('../..', import.meta.url).pathname, '.cache', 'bench', 'costs.json');

export type CostName =
  /** Edge CPU per HTTP uplink (4 data points), µs. */
  | 'edgeHttpCpuMicros'
  /** Edge CPU per MQTT QoS 1 state message, µs. */
  | 'edgeMqttCpuMicros'
  /** Engine CPU per uplink (4 data points) from Kafka into ClickHouse, µs. */
  | 'engineCpuMicros'
  /** Kafka broker CPU per uplink appended and read, µs. */
  | 'brokerCpuMicros'
  /** Data points a ClickHouse server stores per second of its CPU (one core's worth). */
  | 'storeRowsPerCoreSecond'
  /** Edge memory per connected MQTT device, bytes. */
  | 'edgeBytesPerConnection'
  /** Engine memory per live device actor, bytes. */
  | 'engineBytesPerActor'
  /** Command owner memory per device whose session it knows, bytes. */
  | 'ownerBytesPerDevice';

export interface Cost {
  value: number;
  /** The bench and setting that measured it. */
  by: string;
  /** ISO 8601. */
  at: string;
}

export function readCosts(): Partial<Record<CostName, Cost>> {
  try {
    return JSON.parse(readFileSync(COSTS_FILE, 'utf8')) as Partial<Record<CostName, Cost>>;
  } catch {
    return {};
  }
}

export function recordCosts(by: string, values: Partial<Record<CostName, number>>): void {
  const costs = readCosts();
  const at = new Date().toISOString();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && Number.isFinite(value) && value > 0) costs[name as CostName] = { value, by, at };
  }
  mkdirSync(dirname(COSTS_FILE), { recursive: true });
  writeFileSync(COSTS_FILE, `${JSON.stringify(costs, null, 2)}\n`);
}
