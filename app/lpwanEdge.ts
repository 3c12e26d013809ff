/**
 * Wiring of the LPWAN webhooks for the composition root: the applications file
 * (`--lpwan-applications` / LPWAN_APPLICATIONS_FILE, schemas/lpwan.ts LpwanApplicationsDocument; see
 * adapters/lpwan/README.md), the intake and the dead letters of what can never be stored.
 */
import { readFileSync } from 'node:fs';
import type { Clock } from '../engine/kernel/clock.ts';
import { DeadLetterSink } from '../engine/uplink/pipeline/DeadLetterSink.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { LpwanUplinkIntake } from '../engine/lpwan/LpwanUplinkIntake.ts';
import { StaticLpwanApplications } from '../engine/lpwan/StaticLpwanApplications.ts';
import type { Log } from '../engine/ports/log.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { UplinkIngest } from '../engine/uplink/UplinkIngest.ts';
import type { LpwanEdgeDeps } from '../adapters/http/lpwanRoutes.ts';
import type { DeadLetter } from '../schemas/messages.ts';

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

/** Dead letters of a device into its rejections (`GET /device/{id}/rejections`); those of no device stay on the topic only. */
export function rejectionsOf(letters: readonly DeadLetter[]) {
  return letters.filter((l) => l.envelope.deviceId !== '').map((l) => ({
    deviceId: l.envelope.deviceId,
    rejectedAt: l.rejectedAt,
    code: l.code,
    reason: l.reason,
    asset: l.asset ?? '',
    uplinkId: l.envelope.id,
    channel: l.envelope.channel,
  }));
}

export interface LpwanEdgeOptions {
  applications: StaticLpwanApplications;
  registry: Registry;
  log: Log;
  clock: Clock;
  ingest: UplinkIngest;
  rejections: Pick<RejectionStore, 'append'>;
  /** Default `dead-letters`. */
  deadLetterTopic?: string;
}

export function lpwanEdge(options: LpwanEdgeOptions): { deps: LpwanEdgeDeps; deadLetters: DeadLetterSink } {
  const deadLetters = new DeadLetterSink({
    log: options.log,
    clock: options.clock,
    topic: options.deadLetterTopic,
    onDeadLetters: (letters) => options.rejections.append(rejectionsOf(letters)),
  });
  const intake = new LpwanUplinkIntake({ devices: options.registry, ingest: options.ingest, deadLetters, clock: options.clock });
  return { deps: { applications: options.applications, intake }, deadLetters };
}
