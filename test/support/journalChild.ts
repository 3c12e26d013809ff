/**
 * Child process of test/adapters/local-log/local-log-journal.test.ts: opens a local log in `dir`, makes one record per
 * partition durable by itself (the first write of a segment is synced in its file: offset 0 of each
 * partition), appends `count` records in concurrent appends spread over the
 * partitions (`sequential`: one append of 5 records at a time, each its own round in an idle log),
 * prints `acked <key> <partition> <offset>` for each once durable, then `done`, and
 * waits to be killed: the log is never closed, so nothing is checkpointed.
 *
 *   node test/support/journalChild.ts <dir> <count> <journalBytes> [concurrent|sequential]
 */
import { createLocalLog } from '../../adapters/local-log/LocalLog.ts';

const [dir, countArg, journalArg, mode = 'concurrent'] = process.argv.slice(2);
const PARTITIONS = 4;
const log = createLocalLog({ dir, journalBytes: Number(journalArg) });
await log.ensureTopics([{ name: 'j', partitions: PARTITIONS }]);
// Until every partition has its first (synced) record.
const started = new Set<number>();
for (let i = 0; started.size < PARTITIONS; i++) {
  const [position] = await log.append('j', [{ key: `first-${i}`, value: Buffer.from(`first-${i}`) }]);
  started.add(position.partition);
  process.stdout.write(`acked first-${i} ${position.partition} ${position.offset}\n`);
}
const count = Number(countArg);
const appendFive = async (a: number) => {
  const records = Array.from({ length: 5 }, (__, r) => ({ key: `k-${a}-${r}`, value: Buffer.from(`value-${a}-${r}`) }));
  const positions = await log.append('j', records);
  process.stdout.write(positions.map((p, r) => `acked k-${a}-${r} ${p.partition} ${p.offset}\n`).join(''));
};
if (mode === 'sequential') for (let a = 0; a < count / 5; a++) await appendFive(a);
else await Promise.all(Array.from({ length: count / 5 }, (_, a) => appendFive(a)));
process.stdout.write(`done ${JSON.stringify(log.stats())}\n`);
setInterval(() => undefined, 60_000);
