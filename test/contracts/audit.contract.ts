/**
 * Contract of the audit log port (engine/ports/auditLog.ts): entries recorded come back under their
 * ground only, newest first (by at, then the order they were recorded), by keyset pages that
 * neither repeat nor skip; a batch with one malformed or hostile entry writes nothing; concurrent
 * batches all land; entries outlive their ground; pruning deletes exactly what is older than its
 * time and is idempotent. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { AuditEntry, AuditLog, FleetRegistry, GroundRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { newId } from '../../engine/kernel/ids.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, START, type RegistryFactory } from './registry.contract.ts';

type R = AuditLog & FleetRegistry & PrincipalRegistry & GroundRegistry;

function entry(groundId: string, at: number, operation: string, extra: Partial<AuditEntry> = {}): AuditEntry {
  return { groundId, at, actor: { kind: 'user', id: newId() }, operation, targetId: newId(), result: { status: 200 }, ...extra };
}

export function auditContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`audit contract: ${name}`, factory);

  test('entries come back under their ground, newest first, each field as recorded', async ({ r }) => {
    const { ground: g, user } = await ownedGround(r, 'g');
    const { ground: other } = await ownedGround(r, 'other');
    const refused: AuditEntry = { groundId: g.id, at: START + 5, actor: { kind: 'key', id: newId() }, operation: 'deleteDevice', targetId: newId(), result: { status: 403, code: 'FORBIDDEN' } };
    const operator: AuditEntry = { groundId: g.id, at: START + 7, actor: { kind: 'operator', id: 'root' }, operation: 'set-quota', result: { status: 200 } };
    const first = entry(g.id, START + 1, 'putMember', { actor: { kind: 'user', id: user.entity.id } });
    await r.recordAudit([first, refused, entry(other.id, START + 6, 'createDevice')]);
    await r.recordAudit([operator]);
    const listed = await r.listAudit(g.id, {});
    assert.equal(listed.map(({ seq: _seq, ...rest }) => rest), [operator, refused, first]);
    assert.ok(listed[0].seq > listed[1].seq && listed[1].seq > listed[2].seq, 'seq grows in the order entries were recorded');
    assert.is((await r.listAudit(other.id, {})).length, 1);
    assert.equal(await r.listAudit(newId(), {}), []);
    for (const bad of MALFORMED_IDS) assert.equal(await r.listAudit(any(bad), {}), [], `malformed ground id ${String(bad)}`);
  });

  test('pages by (at, seq) neither repeat nor skip, entries of one millisecond included', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'paged');
    // 25 entries over 10 milliseconds, in two batches, out of time order.
    const entries = Array.from({ length: 25 }, (_, i) => entry(g.id, START + 1000 + (i * 7) % 10, `op${i}`));
    await r.recordAudit(entries.slice(0, 12));
    await r.recordAudit(entries.slice(12));
    const all = await r.listAudit(g.id, { limit: 1001 });
    assert.is(all.length, 25);
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1], all[i]];
      assert.ok(a.at > b.at || (a.at === b.at && a.seq > b.seq), 'newest first');
    }
    const paged: string[] = [];
    let before: { at: number; seq: number } | undefined;
    for (;;) {
      const page = await r.listAudit(g.id, { limit: 4, ...(before === undefined ? {} : { before }) });
      paged.push(...page.map((e) => e.operation));
      if (page.length < 4) break;
      const last = page[page.length - 1];
      before = { at: last.at, seq: last.seq };
    }
    assert.equal(paged, all.map((e) => e.operation));
  });

  test('a batch with one bad entry writes nothing; hostile values refused before any query', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'hostile');
    const good = entry(g.id, START, 'createDevice');
    const bad: [string, unknown][] = [
      ['entries.1.groundId', { ...good, groundId: "' OR 1=1 --" }],
      ['entries.1.at', { ...good, at: -1 }],
      ['entries.1.at', { ...good, at: 1.5 }],
      ['entries.1.actor', { ...good, actor: { kind: 'device', id: newId() } }],
      ['entries.1.actor', { ...good, actor: { kind: 'user', id: 'root' } }],
      ['entries.1.actor', { ...good, actor: { kind: 'operator', id: 'rо\u043ebt\u202e' } }],
      ['entries.1.actor', { ...good, actor: { kind: 'operator', id: 'x'.repeat(65) } }],
      ['entries.1.operation', { ...good, operation: 'drop table;' }],
      ['entries.1.operation', { ...good, operation: 'a'.repeat(65) }],
      ['entries.1.targetId', { ...good, targetId: 'short' }],
      ['entries.1.result.status', { ...good, result: { status: 99 } }],
      ['entries.1.result.code', { ...good, result: { status: 403, code: 'forbidden\u0000' } }],
      ['entries.1', { ...good, extra: 1 }],
    ];
    for (const [field, value] of bad) {
      const e = await rejects(r.recordAudit([good, value as AuditEntry]), 'VALIDATION_FAILED');
      assert.ok(String(e.detail?.field).startsWith(field), `${field}: got ${String(e.detail?.field)}`);
    }
    await rejects(r.recordAudit(any('nope') as unknown as AuditEntry[]), 'VALIDATION_FAILED', 'entries');
    assert.equal(await r.listAudit(g.id, {}), []);
    await r.recordAudit([]);
    await rejects(r.listAudit(g.id, { limit: 0 }), 'VALIDATION_FAILED');
    await rejects(r.listAudit(g.id, { before: { at: 1, seq: 0 } }), 'VALIDATION_FAILED');
    await rejects(r.pruneAudit(Number.NaN), 'VALIDATION_FAILED', 'olderThan');
  });

  test('concurrent batches all land; a batch over one insert\'s size lands whole', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'busy');
    await Promise.all([0, 1, 2, 3].map((n) => r.recordAudit(Array.from({ length: 10 }, (_, i) => entry(g.id, START + n * 100 + i, `c${n}`)))));
    await r.recordAudit(Array.from({ length: 2500 }, (_, i) => entry(g.id, START + 10_000 + i, 'bulk')));
    assert.is((await r.listAudit(g.id, { limit: 1001 })).length, 1001);
    let count = 0;
    let before: { at: number; seq: number } | undefined;
    for (;;) {
      const page = await r.listAudit(g.id, { limit: 1000, ...(before === undefined ? {} : { before }) });
      count += page.length;
      if (page.length < 1000) break;
      before = { at: page[999].at, seq: page[999].seq };
    }
    assert.is(count, 2540);
  });

  test('entries outlive their ground; pruning deletes what is older than its time, once', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'pruned');
    await r.recordAudit([entry(g.id, 1000, 'old'), entry(g.id, 1999, 'older-edge'), entry(g.id, 2000, 'kept'), entry(g.id, 3000, 'new')]);
    await r.deleteGround(g.id, { force: true });
    assert.equal((await r.listAudit(g.id, {})).map((e) => e.operation), ['new', 'kept', 'older-edge', 'old']);
    assert.is(await r.pruneAudit(2000), 2);
    assert.equal((await r.listAudit(g.id, {})).map((e) => e.operation), ['new', 'kept']);
    assert.is(await r.pruneAudit(2000), 0, 'idempotent');
    const both = await Promise.all([r.pruneAudit(3001), r.pruneAudit(3001)]);
    assert.is(both[0] + both[1], 2, 'two pruners at once delete each entry once');
    assert.equal(await r.listAudit(g.id, {}), []);
  });

  return test;
}
