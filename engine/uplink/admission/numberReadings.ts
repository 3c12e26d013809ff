/**
 * Numbers the readings of one uplink that share an asset and a measurement time (StateRow.seq):
 * the first 0 (left absent), the next 1, and so on, in the order the uplink holds them. A batch of
 * readings sent without `at` gives all of them the uplink's receive time, and its rows share the
 * uplink id, so without this number the store's sorting key (device, asset, ts, uplink …) would
 * fold them as replays of one reading. Readings at distinct times keep 0, as rows stored before
 * the number existed have it, so a replay of such an uplink folds into them.
 *
 * Deterministic in the rows alone: admission numbers the rows it decides, and the engine numbers
 * the same rows again from the states the decision carries on the log (admitUplink.ts outputOf),
 * so both write the same keys.
 */
import type { StateRow } from '../../../schemas/messages.ts';

/** Up to this many rows are compared pairwise; a map beyond (a batch). */
const PAIRWISE = 8;

/** Sets `seq` on rows[from…] that repeat an earlier row's asset and ts among them. */
export function numberReadings(rows: StateRow[], from = 0): void {
  const end = rows.length;
  if (end - from < 2) return;
  if (end - from <= PAIRWISE) {
    for (let i = from + 1; i < end; i++) {
      const row = rows[i];
      let seq = 0;
      for (let j = from; j < i; j++) if (rows[j].ts === row.ts && rows[j].asset === row.asset) seq++;
      if (seq > 0) row.seq = seq;
    }
    return;
  }
  // ts is an integer, so the first space ends it: the key is unambiguous whatever the asset name.
  const seen = new Map<string, number>();
  for (let i = from; i < end; i++) {
    const row = rows[i];
    const key = `${row.ts} ${row.asset}`;
    const seq = seen.get(key) ?? 0;
    if (seq > 0) row.seq = seq;
    seen.set(key, seq + 1);
  }
}
