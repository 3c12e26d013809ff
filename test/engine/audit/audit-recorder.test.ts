/**
 * AuditRecorder (engine/audit/AuditRecorder.ts) on a simulated clock: entries wait the interval and
 * go in one write; a write the registry refuses for a while is retried and lands once; stop() writes
 * what waits without the interval; past its bound an entry is refused and told, not held.
 */
import * as assert from 'uvu/assert';
import { AuditRecorder } from '../../../engine/audit/AuditRecorder.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { AuditEntry } from '../../../engine/ports/auditLog.ts';
import { test } from '../../support/suite.ts';

const entry = (operation: string): AuditEntry => ({ groundId: 'g'.repeat(22), at: 1, actor: { kind: 'user', id: 'u'.repeat(22) }, operation, result: { status: 200 } });
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

test('entries wait the interval, then go in one write', async () => {
  const clock = new SimulatedClock(0);
  const writes: string[][] = [];
  const recorder = new AuditRecorder({ clock, log: { recordAudit: async (entries) => { writes.push(entries.map((e) => e.operation)); } } });
  recorder.record(entry('a'));
  clock.advance(100);
  recorder.record(entry('b'));
  await settle();
  assert.equal(writes, [], 'nothing before the interval');
  clock.advance(100);
  await settle();
  assert.equal(writes, [['a', 'b']]);
  assert.is(recorder.pending, 0);
});

test('a write refused while the registry is down is retried and lands once; stop() writes what waits', async () => {
  const clock = new SimulatedClock(0);
  const writes: string[][] = [];
  let down = 2;
  const recorder = new AuditRecorder({ clock, log: { async recordAudit(entries) {
    if (down-- > 0) throw new FleetError('UNAVAILABLE', 'registry down');
    writes.push(entries.map((e) => e.operation));
  } } });
  recorder.record(entry('a'));
  clock.advance(200);
  await settle();
  clock.advance(1000);
  await settle();
  clock.advance(2000);
  await settle();
  assert.equal(writes, [['a']]);
  recorder.record(entry('b'));
  await recorder.stop();
  assert.equal(writes, [['a'], ['b']], 'written at stop, before the interval');
  recorder.record(entry('c'));
  await settle();
  assert.equal(writes, [['a'], ['b']], 'nothing after stop');
});

test('past its bound an entry is refused and told; a batch that fails for good is told', async () => {
  const clock = new SimulatedClock(0);
  const dropped: [number, string | undefined][] = [];
  const recorder = new AuditRecorder({
    clock, maxPending: 3, maxRetries: 0,
    log: { recordAudit: async () => { throw new FleetError('VALIDATION_FAILED', 'bad entry'); } },
    onDropped: (n, error) => dropped.push([n, error?.code]),
  });
  for (const op of ['a', 'b', 'c', 'd']) recorder.record(entry(op));
  assert.equal(dropped, [[1, undefined]]);
  assert.is(recorder.pending, 3);
  clock.advance(200);
  await settle();
  assert.equal(dropped, [[1, undefined], [3, 'VALIDATION_FAILED']]);
  await recorder.stop();
});

test.run();
