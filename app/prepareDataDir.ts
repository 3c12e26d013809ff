/**
 * The data dir before anything opens in it. It holds the registry (token hashes), the log (raw
 * uplink bodies), the store and the admin socket (which creates users and tokens for whoever
 * connects), so it is the service user's alone: created 0700, and refused when other users can
 * write it, since they could then replace its files or put their own socket in its place.
 *
 * An existing dir that others can only read or enter (0755, as `mkdir` makes it) is accepted: it may
 * be the operator's choice, and what the service creates in it is still its own, because the entry
 * point runs the process under umask 077 (bin/fleetstream.ts). Files an earlier version created
 * there may still be readable, so a warning names the chmod that closes them all.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { FleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';

export function prepareDataDir(root: string, logger: Pick<Logger, 'warn'>): void {
  // mkdir's mode passes through the umask; chmod makes the new dir 0700 whatever it is.
  if (mkdirSync(root, { recursive: true, mode: 0o700 }) !== undefined) chmodSync(root, 0o700);
  const mode = statSync(root).mode & 0o777;
  const shown = `0${mode.toString(8)}`;
  if ((mode & 0o022) !== 0) {
    throw new FleetError('VALIDATION_FAILED', `data dir ${root} is writable by other users (mode ${shown}): they could replace its files or its admin socket. `
      + `Make it yours alone (chmod go-w ${root}, better chmod 700 ${root}) or point --data-dir (DATA_DIR) at a new directory, which fleetstream creates 0700`, { detail: { field: 'dataDir' } });
  }
  if ((mode & 0o077) !== 0) {
    logger.warn(`data dir ${root} is readable by other users (mode ${shown}): what fleetstream creates in it is its own (files 0600, directories 0700), files from before may not be; chmod 700 ${root} closes them all`, { dataDir: root });
  }
}
