/** A local log with topics uplinks and dead-letters, and a directory of sensor devices, for UplinkPipeline suites. */
import { MemoryDirectory } from '../../engine/ports/directory.ts';
import type { Log } from '../../engine/ports/log.ts';
import type { RowSink } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import { createLocalLog } from '../../adapters/local-log/LocalLog.ts';
import { Topics, type StateRow } from '../../schemas/messages.ts';
import { tempDir } from './tmp.ts';

export const jsonBytes = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));

/** A row sink that keeps every row appended, durable at once. */
export class ListSink implements RowSink {
  rows: StateRow[] = [];
  async append(rows: readonly StateRow[]): Promise<void> {
    this.rows.push(...rows);
  }
  async flush(): Promise<void> {}
}

const LOG_METHODS = ['ensureTopics', 'partitionCount', 'append', 'consumer', 'committed', 'endOffsets', 'startOffsets', 'deleteGroup', 'close'] as const satisfies readonly (keyof Log)[];
/** Fails to compile when the Log port gains a method LOG_METHODS does not forward. */
const everyLogMethod: [Exclude<keyof Log, (typeof LOG_METHODS)[number]>] extends [never] ? true : never = true;
void everyLogMethod;

/** `log` with some of its methods replaced; every other call goes to `log` itself. */
export function logWith(log: Log, replaced: Partial<Log>): Log {
  const forwarded = Object.fromEntries(LOG_METHODS.map((m) => [m, (log[m] as (...args: unknown[]) => unknown).bind(log)])) as unknown as Log;
  return { ...forwarded, ...replaced };
}

export interface UplinkPipelineWorldOptions {
  /** Names the temporary directory. */
  name: string;
  /** Partitions of topic uplinks. */
  partitions: number;
  /** Devices d0…d(n-1), each with one number sensor named t (asset a<i>). */
  devices: number;
}

export async function uplinkPipelineWorld(options: UplinkPipelineWorldOptions) {
  const tmp = tempDir(options.name);
  const log: Log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: options.partitions }, { name: Topics.deadLetters, partitions: 1 }]);
  const directory = new MemoryDirectory();
  for (let d = 0; d < options.devices; d++) directory.put({ id: `d${d}`, assets: [{ id: `a${d}`, name: 't', is: 'sensor', profile: { type: 'number' } }] });
  /** The offsets group `engine` committed on topic uplinks, partition by partition. */
  const committed = async (): Promise<number[]> => {
    const out: number[] = [];
    for (let p = 0; p < options.partitions; p++) out.push(await log.committed('engine', Topics.uplinks, p));
    return out;
  };
  /** Runs `body` with the pipeline started, then stops it, closes the log and removes the directory. */
  const running = async (pipeline: { start(): Promise<void>; stop(): Promise<void> }, body: () => Promise<void>): Promise<void> => {
    await pipeline.start();
    try {
      await body();
    } finally {
      await pipeline.stop();
      await log.close();
      tmp.remove();
    }
  };
  return { tmp, log, directory, committed, running };
}
