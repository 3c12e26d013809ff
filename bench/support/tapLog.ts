/**
 * A Log that passes everything through and notes when the first batch was handed to a consumer and
 * when the commits first covered `expected` records: the span a benchmark measures.
 */
import type { CommitRequest, Consumer, ConsumerOptions, Log } from '../../engine/ports/log.ts';

export interface LogTap {
  log: Log;
  /** performance.now() of the first onBatch call. */
  firstBatchAt: number;
  /** performance.now() of the commit that brought the committed offsets to `expected`. */
  lastCommitAt: number;
  /** Resolves at that commit. */
  allCommitted: Promise<void>;
}

/** `expected`: records the consumers must get through (committed offsets summed over partitions, from 0). */
export function tapLog(inner: Log, expected: number): LogTap {
  const committed = new Map<string, number>();
  let sum = 0;
  let done!: () => void;
  const tap: LogTap = {
    log: undefined as unknown as Log,
    firstBatchAt: Number.NaN,
    lastCommitAt: Number.NaN,
    allCommitted: new Promise<void>((resolve) => { done = resolve; }),
  };
  tap.log = {
    ensureTopics: (topics) => inner.ensureTopics(topics),
    partitionCount: (topic) => inner.partitionCount(topic),
    append: (topic, records) => inner.append(topic, records),
    committed: (group, topic, partition) => inner.committed(group, topic, partition),
    endOffsets: (topic) => inner.endOffsets(topic),
    startOffsets: (topic) => inner.startOffsets(topic),
    deleteGroup: (group) => inner.deleteGroup(group),
    close: () => inner.close(),
    consumer(options: ConsumerOptions): Consumer {
      const consumer = inner.consumer({
        ...options,
        onBatch: (batch) => {
          if (Number.isNaN(tap.firstBatchAt)) tap.firstBatchAt = performance.now();
          return options.onBatch(batch);
        },
      });
      return {
        start: () => consumer.start(),
        pause: (partitions) => consumer.pause(partitions),
        resume: (partitions) => consumer.resume(partitions),
        seek: (positions) => consumer.seek(positions),
        stop: () => consumer.stop(),
        async commit(offsets: CommitRequest[]) {
          await consumer.commit(offsets);
          for (const { topic, partition, offset } of offsets) {
            const key = `${topic}/${partition}`;
            sum += offset - (committed.get(key) ?? 0);
            committed.set(key, offset);
          }
          if (sum >= expected && Number.isNaN(tap.lastCommitAt)) {
            tap.lastCommitAt = performance.now();
            done();
          }
        },
      };
    },
  };
  return tap;
}
