/**
 * The engine of a process (role engine or all): topic `uplinks` → device actors → state store,
 * refusals onto `dead-letters` and into the devices' rejections. Shared by the service and the
 * test stacks, so what the tests run is what the service runs.
 */
import type { Clock } from '../engine/kernel/clock.ts';
import type { FleetError } from '../engine/kernel/errors.ts';
import type { DeviceDirectory } from '../engine/ports/directory.ts';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { rejectionRowsOf } from '../engine/uplink/pipeline/rejectionRows.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { defaultConfig, type Config } from '../schemas/config.ts';
import { Topics, type DeadLetter, type StateRow } from '../schemas/messages.ts';
import type { AtWindow } from '../engine/uplink/admission/compileDevice.ts';
import { serviceCompiler } from './deviceCompiler.ts';

export interface EngineOptions {
  log: Log;
  store: Pick<StateStore, 'append'>;
  rejections: Pick<RejectionStore, 'append'>;
  directory: DeviceDirectory;
  clock: Clock;
  /** Default `uplinks`, `dead-letters`, group `fleetstream-engine`. */
  names?: { uplinks: string; deadLetters: string; engineGroup: string };
  settings?: Partial<Config['engine']> & { commitIntervalMs?: number; maxRetries?: number };
  /** Measurement times admitted for records that come without an edge's decision. Default DEFAULT_AT_WINDOW. */
  atWindow?: AtWindow;
  /** States once durable in the store (feeds). */
  onStored?(rows: readonly StateRow[]): void;
  /** Dead letters once durable, after the rejections are recorded. */
  onDeadLetters?(letters: readonly DeadLetter[]): void;
  onError?(error: FleetError): void;
}

export interface Engine {
  readonly pipeline: UplinkPipeline;
  readonly batcher: StateBatcher;
  start(): Promise<void>;
  /** Stops fetching, stores what is in flight, commits, closes the batcher. */
  stop(): Promise<void>;
}

export function buildEngine(options: EngineOptions): Engine {
  const s = options.settings ?? {};
  const names = options.names ?? { uplinks: Topics.uplinks, deadLetters: Topics.deadLetters, engineGroup: 'fleetstream-engine' };
  // The service's defaults (schemas/config.ts): 40 000 rows per insert, as ClickHouse wants few large
  // inserts (each makes a part: ~13 ms on an 18.16 server whatever its size; a 40 000-row insert there
  // takes 38 ms where four of 10 000 take 84), and room in flight for a full batch while one is stored.
  const batchRows = s.batchRows ?? defaultConfig.engine.batchRows;
  const batcher = new StateBatcher({
    store: options.store,
    clock: options.clock,
    maxRows: batchRows,
    maxDelayMs: s.batchDelayMs ?? defaultConfig.engine.batchDelayMs,
    maxPendingRows: batchRows * 4,
    // A store outage is waited out: consumption pauses (bounded in-flight work) until it is back.
    maxRetries: s.maxRetries ?? Number.MAX_SAFE_INTEGER,
  });
  const pipeline = new UplinkPipeline({
    log: options.log,
    rows: batcher,
    directory: options.directory,
    clock: options.clock,
    topic: names.uplinks,
    group: names.engineGroup,
    deadLetterTopic: names.deadLetters,
    maxInFlight: s.maxInFlight ?? defaultConfig.engine.maxInFlight,
    commitIntervalMs: s.commitIntervalMs,
    compile: serviceCompiler(options.atWindow),
    actors: { passivateAfterMs: s.passivateAfterMs, mailboxCapacity: s.mailboxCapacity },
    onDeadLetters: async (letters) => {
      await options.rejections.append(rejectionRowsOf(letters));
      options.onDeadLetters?.(letters);
    },
    onStored: options.onStored,
    onError: options.onError,
  });
  return {
    pipeline,
    batcher,
    start: () => pipeline.start(),
    async stop() {
      await pipeline.stop();
      await batcher.close();
    },
  };
}
