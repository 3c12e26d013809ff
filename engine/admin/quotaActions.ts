/**
 * Operator actions on grounds' quotas (`fleetstream admin set-quota | remove-quota | show-quota`,
 * docs/grounds.md "Quotas"). A limit as typed on the command line is a whole number in range, or
 * `none` to remove that one limit; anything else (zero, negative, a fraction, an exponent, spaces,
 * other digits than ASCII, beyond the maximum) is VALIDATION_FAILED naming the option.
 */
import { FleetError } from '../kernel/errors.ts';
import type { GroundQuota, QuotaPatch, Registry } from '../ports/registry.ts';
import { QUOTA_MAXIMUMS, type QuotaName } from '../../schemas/quotas.ts';

/** The command line's option of each limit. */
export const QUOTA_OPTIONS: Readonly<Record<QuotaName, string>> = { devices: 'devices', statesPerSecond: 'states-per-second', retentionDays: 'retention-days' };

/** A quota as the CLI prints it: every limit, null where the ground has none. */
export interface QuotaView {
  groundId: string;
  devices: number | null;
  statesPerSecond: number | null;
  retentionDays: number | null;
}

/** `text` as a limit: a whole number from 1 to the maximum, or null for `none`. */
export function parseLimit(name: QuotaName, text: string): number | null {
  const option = QUOTA_OPTIONS[name];
  if (text === 'none') return null;
  const maximum = QUOTA_MAXIMUMS[name];
  const fail = (why: string) => new FleetError('VALIDATION_FAILED', `--${option}: ${why} (got "${text.slice(0, 40)}")`, { detail: { field: option } });
  if (!/^[0-9]{1,12}$/.test(text)) throw fail(`a whole number from 1 to ${maximum}, or none to remove the limit`);
  const value = Number(text);
  if (value < 1) throw fail('at least 1 (none removes the limit)');
  if (value > maximum) throw fail(`at most ${maximum}`);
  return value;
}

function view(groundId: string, quota: GroundQuota | undefined): QuotaView {
  return { groundId, devices: quota?.devices ?? null, statesPerSecond: quota?.statesPerSecond ?? null, retentionDays: quota?.retentionDays ?? null };
}

async function requireGround(registry: Registry, groundId: string): Promise<void> {
  if ((await registry.getGround(groundId)) === undefined) throw new FleetError('NOT_FOUND', `no ground ${groundId.slice(0, 40)}`, { detail: { field: 'groundId' } });
}

/** Sets the limits given (as typed), keeping the others; at least one must be given. */
export async function setQuota(registry: Registry, groundId: string, limits: Partial<Record<QuotaName, string>>): Promise<QuotaView> {
  const patch: QuotaPatch = {};
  for (const name of Object.keys(QUOTA_OPTIONS) as QuotaName[]) {
    const text = limits[name];
    if (text !== undefined) patch[name] = parseLimit(name, text);
  }
  if (Object.keys(patch).length === 0) {
    throw new FleetError('VALIDATION_FAILED', 'set-quota needs at least one of --devices, --states-per-second, --retention-days', { detail: { field: 'devices' } });
  }
  await requireGround(registry, groundId);
  return view(groundId, await registry.setQuota(groundId, patch));
}

export async function removeQuota(registry: Registry, groundId: string): Promise<{ groundId: string; removed: boolean }> {
  await requireGround(registry, groundId);
  return { groundId, removed: await registry.removeQuota(groundId) };
}

export async function showQuota(registry: Registry, groundId: string): Promise<QuotaView> {
  await requireGround(registry, groundId);
  return view(groundId, await registry.getQuota(groundId));
}
