/**
 * The Node flags package.json's start script runs the service with (`node --flag … bin/fleetstream.ts
 * start`): what a test or bench spawning the service passes too, so it runs as `npm start` does.
 */
import { readFileSync } from 'node:fs';

export const startFlags: readonly string[] = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts.start as string)
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));
