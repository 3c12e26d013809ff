/**
 * One ground's audit log written by two edges sharing a PostgreSQL registry (docs/grounds.md "Audit
 * log"): changes made through either edge, by users and keys, interleaved, all land in the one log
 * each once, and either edge answers it; an edge that stops writes what it still holds (its
 * recorder's interval not yet passed) before it is gone.
 */
import { randomBytes } from 'node:crypto';
import * as assert from 'uvu/assert';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { EdgeHarness } from '../../support/edgeHarness.ts';
import { dropSchema } from '../../support/postgresSchema.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { auditUntil, readAudit, type AuditReader } from '../../support/auditLog.ts';

const reader = (h: EdgeHarness, other: EdgeHarness): AuditReader => ({
  get: (path, token) => h.request('GET', path, { token }),
  tick: () => { h.clock.advance(250); other.clock.advance(250); },
});

withEnv('http audit log on two edges', ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', ({ DATABASE_URL_TEST: url }) => {
  const test = suite('audit log: two edges, one PostgreSQL registry');

  test('changes through edge A and edge B are in one log, each once; a stopping edge writes what it holds', async () => {
    const schema = `audit_edges_${process.pid}_${randomBytes(4).toString('hex')}`;
    const registryA = await createPostgresRegistry({ url: url!, schema, poolSize: 4 });
    const registryB = await createPostgresRegistry({ url: url!, schema, poolSize: 4 });
    const database = { url: url!, schema };
    const a = await EdgeHarness.start({ registry: registryA, database, clockStart: Date.now() });
    const b = await EdgeHarness.start({ registry: registryB, database, clockStart: Date.now() });
    let aClosed = false;
    try {
      const s = await a.seed();
      const key = await registryA.createKey(s.groundId, { name: 'ops', role: 'editor' }, s.userId);
      const expected: string[] = [];
      for (let i = 0; i < 20; i++) {
        const [edge, name] = i % 2 === 0 ? [a, 'A'] : [b, 'B'];
        const token = i % 3 === 0 ? key.token : s.userToken;
        const res = await edge.request('PATCH', `/device/${s.deviceId}`, { token, json: { title: `${name}${i}` } });
        assert.is(res.status, 200, res.text);
        expected.push(`updateDevice ${i % 3 === 0 ? `key:${key.key.id}` : `user:${s.userId}`}`);
      }
      const viewer = await registryB.createUser({ name: 'viewer' });
      await registryB.setMemberRole(s.groundId, viewer.entity.id, 'viewer');
      assert.is((await b.request('DELETE', `/device/${s.deviceId}`, { token: viewer.token })).status, 403);
      expected.push(`deleteDevice user:${viewer.entity.id}`);
      const items = await auditUntil(reader(b, a), s.groundId, s.userToken, (all) => all.length >= expected.length, 'both edges\' entries');
      assert.equal(items.map((e) => `${e.operation} ${e.actor.kind}:${e.actor.id}`).sort(), [...expected].sort());
      assert.equal(await readAudit(reader(a, b), s.groundId, s.userToken), items, 'either edge answers the same log');

      // Edge A's clock does not move: its entry waits in its recorder until A stops, which writes it.
      assert.is((await a.request('PATCH', `/ground/${s.groundId}`, { token: s.userToken, json: { name: 'last-on-a' } })).status, 200);
      await a.close();
      aClosed = true;
      const after = await readAudit({ get: (path, token) => b.request('GET', path, { token }) }, s.groundId, s.userToken);
      assert.is(after.length, items.length + 1);
      assert.equal([after[0].operation, after[0].actor.id], ['updateGround', s.userId]);
    } finally {
      if (!aClosed) await a.close();
      await b.close();
      await registryA.close();
      await registryB.close();
      await dropSchema(url!, schema);
    }
  });

  test.run();
});
