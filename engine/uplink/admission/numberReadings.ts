/**
 * Numbers the readings of one uplink that share an asset and a measurement time (StateRow.seq):
 * the first 0 (left absent), the next 1, and so on, in the order the uplink holds them. A batch of
 * readings sent without `at` gives all of them the uplink's default time (the receive time, or an
 * LPWAN network's), and its rows share the uplink id, so without this number the store's sorting
 * key (device, asset, ts, uplink …) would fold them as replays of one reading. Rows stored before
 * the number existed have 0, as every reading not repeated here keeps, so a replay of such an
 * uplink folds into them.
 *
 * Only rows at the default time are numbered: admission refuses an asset repeated at one explicit
 * `at` (DUPLICATE_READING, processUplink.ts), so every tie it lets through involves a reading
 * without `at`, and so the default time. That keeps the usual batch, timed by its device, to one
 * comparison per row. Deterministic in the rows and that time alone: admission numbers the rows it
 * decides, and the engine numbers the same rows again from the states the decision carries on the
 * log (admitUplink.ts outputOf), so both write the same keys.
 */
import type { StateRow } from '../../../schemas/messages.ts';

/** Sets `seq` on rows[from…] at `defaultTs` that repeat an earlier one's asset among them. */
export function numberReadings(rows: StateRow[], defaultTs: number, from = 0): void {
  let first: StateRow | undefined;
  let counts: Map<string, number> | undefined;
  for (let i = from; i < rows.length; i++) {
    const row = rows[i];
    if (row.ts !== defaultTs) continue;
    if (first === undefined) {
      first = row;
      continue;
    }
    counts ??= new Map([[first.asset, 1]]);
    const seq = counts.get(row.asset) ?? 0;
    if (seq > 0) row.seq = seq;
    counts.set(row.asset, seq + 1);
  }
}
