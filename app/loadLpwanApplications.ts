/**
 * Wiring of the LPWAN webhooks for the composition root: the applications file
 * (`--lpwan-applications` / LPWAN_APPLICATIONS_FILE, schemas/lpwan.ts LpwanApplicationsDocument; see
 * adapters/lpwan/README.md).
 */
import { readFileSync } from 'node:fs';
import { FleetError } from '../engine/kernel/errors.ts';
import { StaticLpwanApplications } from '../engine/lpwan/StaticLpwanApplications.ts';

/** The applications of the file; none when no file is configured (every webhook is then 401). */
export function loadLpwanApplications(path: string | undefined): StaticLpwanApplications {
  if (path === undefined) return new StaticLpwanApplications({ applications: [] });
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new FleetError('VALIDATION_FAILED', `LPWAN applications file ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return new StaticLpwanApplications(document);
  } catch (error) {
    throw new FleetError('VALIDATION_FAILED', `${path}: ${(error as Error).message}`, { cause: error });
  }
}
