/**
 * Reading a ground's audit log in tests (docs/grounds.md "Audit log"): entries reach the registry
 * within the recorder's interval, so a read waits (advancing a simulated clock past the interval
 * when the edge runs on one) until what is asserted is there, then returns every entry, newest first.
 */
import { waitFor } from './tmp.ts';

export interface AuditItem {
  groundId: string;
  at: number;
  actor: { kind: 'user' | 'key' | 'operator'; id: string };
  operation: string;
  targetId?: string;
  result: { status: number; code?: string };
}

export interface AuditReader {
  /** GET of a path relative to the service, with a token: status and JSON body. */
  get(path: string, token: string): Promise<{ status: number; json: any }>;
  /** Moves a simulated clock on, so the recorder's interval passes. */
  tick?(): void;
}

/** Every entry of the ground, read as its owner by pages of 1000. */
export async function readAudit(reader: AuditReader, groundId: string, ownerToken: string): Promise<AuditItem[]> {
  const items: AuditItem[] = [];
  let before: string | undefined;
  for (;;) {
    const res = await reader.get(`/ground/${groundId}/audit?limit=1000${before === undefined ? '' : `&before=${before}`}`, ownerToken);
    if (res.status !== 200) throw new Error(`GET audit: ${res.status} ${JSON.stringify(res.json)}`);
    items.push(...res.json.items);
    if (res.json.next === undefined) return items;
    before = res.json.next;
  }
}

/** The ground's entries once `until` holds of them (10 s at most). */
export async function auditUntil(reader: AuditReader, groundId: string, ownerToken: string, until: (items: AuditItem[]) => boolean, what = 'audit entries'): Promise<AuditItem[]> {
  let items: AuditItem[] = [];
  await waitFor(async () => {
    reader.tick?.();
    items = await readAudit(reader, groundId, ownerToken);
    return until(items);
  }, 10_000, what);
  return items;
}

/** An entry matching `expected` (its fields that are given) is in `items`. */
export function hasEntry(items: readonly AuditItem[], expected: { actor?: Partial<AuditItem['actor']>; operation?: string; targetId?: string; result?: Partial<AuditItem['result']> }): boolean {
  return items.some((item) =>
    (expected.operation === undefined || item.operation === expected.operation)
    && (expected.targetId === undefined || item.targetId === expected.targetId)
    && (expected.actor?.kind === undefined || item.actor.kind === expected.actor.kind)
    && (expected.actor?.id === undefined || item.actor.id === expected.actor.id)
    && (expected.result?.status === undefined || item.result.status === expected.result.status)
    && (expected.result?.code === undefined || item.result.code === expected.result.code));
}
