/**
 * The Node flags package.json's start script runs the service with (`node --flag … bin/fleetstream.ts
 * start`): what a test or bench spawning the service passes too, so it runs as `npm start` does.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

export const startFlags: readonly string[] = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts.start as string)
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));

/**
 * Sets the start script's flags (V8's, all of them) in this process, for a bench that runs the
 * service's parts in its own process or in a worker of it, so that it measures them as the service
 * runs. Call before those parts start: the garbage collector's flags then hold for a worker's heap
 * from its start, and for this thread's from now on.
 */
export function useStartFlags(): void {
  for (const flag of startFlags) setFlagsFromString(flag);
}
