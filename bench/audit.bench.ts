/**
 * What recording the grounds' audit log (docs/grounds.md "Audit log") costs a change over HTTP: the
 * real HTTP edge app (createEdgeApp, called in process: no sockets to measure) over the embedded
 * registry (PGlite, in this process like the embedded service's), owners renaming devices
 * (`PATCH /device/{id}`, a registry write each) with the audit log on (engine/audit/AuditRecorder.ts:
 * an entry per request, one insert every 200 ms, in this same process) and off. Rounds alternate;
 * medians of requests per second and the ratio on/off. Target ≥ 0.95×. Not a test.
 *
 *   node bench/audit.bench.ts
 */
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { createEdgeApp } from '../adapters/http/createEdgeApp.ts';
import type { EdgeDeps } from '../adapters/http/EdgeDeps.ts';
import { AuditRecorder } from '../engine/audit/AuditRecorder.ts';
import { systemClock } from '../engine/kernel/clock.ts';

const ROUNDS = 9;
const WARMUP_ROUNDS = 3;
const REQUESTS = 3000;
const CONCURRENCY = 16;
const GROUNDS = 50;

const registry = await createPgliteRegistry();
const owners: { token: string; deviceId: string; groundId: string }[] = [];
for (let i = 0; i < GROUNDS; i++) {
  const user = await registry.createUser({ name: `owner-${i}` });
  const ground = await registry.createGround({ name: `ground-${i}`, userId: user.entity.id });
  const created = await registry.createDevice({ groundId: ground.id, name: `device-${i}` });
  owners.push({ token: user.token, deviceId: created.device.id, groundId: ground.id });
}

// Only the change routes are called: what states would need is not there.
const unused = {} as never;
const base: EdgeDeps = { registry, admission: unused, store: unused, rejections: unused, clock: systemClock, console: false };
const recorder = new AuditRecorder({ log: registry, clock: systemClock });
const apps = { off: createEdgeApp(base), on: createEdgeApp({ ...base, audit: recorder }) };

/** Requests per second (wall) and CPU µs per request (this process: the edge, PGlite and the recorder's inserts). */
async function round(which: 'on' | 'off'): Promise<{ perSecond: number; cpuUs: number }> {
  const app = apps[which];
  let next = 0;
  const startedAt = performance.now();
  const cpuAt = process.cpuUsage();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    for (let n = next++; n < REQUESTS; n = next++) {
      const owner = owners[n % GROUNDS];
      const res = await app.fetch(new Request(`http://edge/device/${owner.deviceId}`, {
        method: 'PATCH', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: `t${n}` }),
      }));
      if (res.status !== 200) throw new Error(`PATCH answered ${res.status}: ${await res.text()}`);
    }
  }));
  // The round's entries written within it: their inserts are part of what the log costs.
  if (which === 'on') await recorder.flush();
  const cpu = process.cpuUsage(cpuAt);
  return { perSecond: REQUESTS / ((performance.now() - startedAt) / 1000), cpuUs: (cpu.user + cpu.system) / REQUESTS };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (let r = 0; r < WARMUP_ROUNDS; r++) {
  await round('off');
  await round('on');
}
const off: { perSecond: number; cpuUs: number }[] = [];
const on: { perSecond: number; cpuUs: number }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  off.push(await round('off'));
  on.push(await round('on'));
}
await recorder.stop();
const recorded = (await Promise.all(owners.map((o) => registry.listAudit(o.groundId, { limit: 1001 })))).reduce((n, page) => n + page.length, 0);
const rate = (xs: typeof on) => median(xs.map((x) => x.perSecond));
const cpu = (xs: typeof on) => median(xs.map((x) => x.cpuUs));
console.log(`\nPATCH /device/{id} by owners of ${GROUNDS} grounds, ${REQUESTS} requests a round, ${CONCURRENCY} at once, PGlite in process, medians of ${ROUNDS} rounds after ${WARMUP_ROUNDS} of warm-up`);
for (const [name, xs] of [['audit log off', off], ['audit log on ', on]] as const) {
  console.log(`  ${name} ${Math.round(rate(xs)).toLocaleString('en-US').padStart(7)} requests/s  ${Math.round(cpu(xs)).toString().padStart(5)} µs CPU a request  (${xs.map((x) => Math.round(x.perSecond)).join(', ')})`);
}
console.log(`  ratio on/off: ${(rate(on) / rate(off)).toFixed(3)}× requests/s, ${(cpu(off) / cpu(on)).toFixed(3)}× requests per CPU second (target ≥ 0.95×); ${recorded} entries listed (at most 1 001 per ground)`);
// The log's own part, apart from the noise of the rounds: the CPU of writing entries in the batches
// the recorder makes (about 150 per 200 ms at these rates), against a request's CPU with the log off.
const batch = () => Array.from({ length: 150 }, (_, i) => ({
  groundId: owners[i % GROUNDS].groundId, at: Date.now(), actor: { kind: 'user' as const, id: owners[0].deviceId }, operation: 'updateDevice', targetId: owners[i % GROUNDS].deviceId, result: { status: 200 },
}));
for (let i = 0; i < 20; i++) await registry.recordAudit(batch());
const writeAt = process.cpuUsage();
for (let i = 0; i < 100; i++) await registry.recordAudit(batch());
const written = process.cpuUsage(writeAt);
const perEntry = (written.user + written.system) / 15_000;
console.log(`  writing entries: ${perEntry.toFixed(1)} µs CPU an entry (batches of 150), ${(100 * perEntry / cpu(off)).toFixed(1)} % of a request's CPU with the log off`);
await registry.close();
