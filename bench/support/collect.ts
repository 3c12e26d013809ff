import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full garbage collection of this thread's heap. `shrink`: one that also gives back what V8 keeps
 * for speed — the young generation grown under load, free pages — as on a low-memory notification
 * (what the service runs once it is ready, bin/fleetstream.ts, and what V8's memory reducer does to
 * an idle process on its own after a while).
 */
export function collect(shrink = false): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as (options?: object) => void)(shrink ? { type: 'major', execution: 'sync', flavor: 'last-resort' } : undefined);
}
