/**
 * CommandHistoryRecorder on a simulated clock: batching by delay and size, copies of the actors'
 * views, retries of retriable failures with backoff, drops on refusal and overflow, flush on close;
 * and the command actors' lifecycle recorded through it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { CommandActors } from '../../../engine/actors/CommandActors.ts';
import { CommandHistoryRecorder } from '../../../engine/commands/CommandHistoryRecorder.ts';
import type { CommandTransport } from '../../../engine/ports/commandTransport.ts';
import type { CommandView } from '../../../schemas/commands.ts';

const flush = async () => { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); };

class FakeHistory {
  batches: CommandView[][] = [];
  failures: FleetError[] = [];
  async append(rows: readonly CommandView[]): Promise<void> {
    const failure = this.failures.shift();
    if (failure !== undefined) throw failure;
    this.batches.push(rows.map((r) => ({ ...r })));
  }
}

const view = (id: string, status: CommandView['status'] = 'queued'): CommandView =>
  ({ id, deviceId: 'd', kind: 'asset', asset: 'led', value: 1, at: '2026-01-01T00:00:00Z', issuer: 't', status, updatedAt: 0, attempts: 0 });

test('transitions are copied and appended together after maxDelayMs, or at once when a batch is full', async () => {
  const clock = new SimulatedClock(0);
  const history = new FakeHistory();
  const r = new CommandHistoryRecorder({ history, clock, maxDelayMs: 100, maxBatch: 3 });
  const v = view('a');
  r.record(v);
  v.status = 'sent';
  r.record(v);
  clock.advance(99);
  await flush();
  assert.is(history.batches.length, 0);
  clock.advance(1);
  await flush();
  assert.equal(history.batches.map((b) => b.map((x) => x.status)), [['queued', 'sent']]);
  for (const id of ['b', 'c', 'd']) r.record(view(id));
  await flush();
  assert.equal(history.batches.length, 2, 'a full batch does not wait');
  assert.is(r.pending, 0);
  assert.is(clock.pending, 0);
});

test('retriable failures keep the batch and retry with a doubling backoff; refused batches are dropped and counted', async () => {
  const clock = new SimulatedClock(0);
  const history = new FakeHistory();
  const dropped: [number, string | undefined][] = [];
  const r = new CommandHistoryRecorder({ history, clock, maxDelayMs: 10, retryBaseMs: 100, onDropped: (n, e) => dropped.push([n, e?.code]) });
  history.failures.push(new FleetError('UNAVAILABLE', 'down'), new FleetError('TIMEOUT', 'slow'));
  r.record(view('a'));
  clock.advance(10);
  await flush();
  assert.is(history.batches.length, 0);
  clock.advance(99);
  await flush();
  assert.is(history.batches.length, 0, 'no retry before the backoff');
  clock.advance(1);
  await flush();
  assert.is(history.batches.length, 0, 'second failure');
  clock.advance(199);
  await flush();
  assert.is(history.batches.length, 0, 'backoff doubled');
  clock.advance(1);
  await flush();
  assert.equal(history.batches.map((b) => b.map((x) => x.id)), [['a']]);

  history.failures.push(new FleetError('INTERNAL', 'bad row'));
  r.record(view('b'));
  r.record(view('c'));
  clock.advance(10);
  await flush();
  assert.equal(dropped, [[2, 'INTERNAL']]);
  assert.is(r.dropped, 2);
  assert.is(r.pending, 0);
});

test('past maxPending new transitions are dropped, not queued without end; close flushes what waits', async () => {
  const clock = new SimulatedClock(0);
  const history = new FakeHistory();
  const r = new CommandHistoryRecorder({ history, clock, maxPending: 5, maxBatch: 100 });
  for (let i = 0; i < 8; i++) r.record(view(`c${i}`));
  assert.is(r.pending, 5);
  assert.is(r.dropped, 3);
  await r.close();
  assert.equal(history.batches.flat().map((x) => x.id), ['c0', 'c1', 'c2', 'c3', 'c4']);
  r.record(view('late'));
  assert.is(r.pending, 0, 'nothing is recorded after close');
});

test('the command actors\' lifecycle reaches the history with per-change code and reason', async () => {
  const clock = new SimulatedClock(1000);
  const history = new FakeHistory();
  const recorder = new CommandHistoryRecorder({ history, clock, maxDelayMs: 50 });
  let online = false;
  const listeners = new Set<(id: string) => void>();
  const transport: CommandTransport = {
    deliver: async () => (online ? 'delivered' : 'offline'),
    onReachable: (l) => { listeners.add(l); return () => listeners.delete(l); },
  };
  const actors = new CommandActors({ clock, transport, onChange: (v) => recorder.record(v) });
  actors.submit({ id: 'c1', deviceId: 'd1', kind: 'asset', asset: { id: 'A', name: 'led' }, value: true, at: '2026-01-01T00:00:00Z', issuer: 'user:u' });
  await flush();
  clock.advance(10);
  online = true;
  for (const l of listeners) l('d1');
  await flush();
  clock.advance(50);
  await flush();
  const rows = history.batches.flat();
  assert.equal(rows.map((x) => [x.status, x.attempts, x.updatedAt, x.reason !== undefined]), [
    ['queued', 0, 1000, false], ['sent', 1, 1000, false], ['queued', 1, 1000, true], ['sent', 2, 1010, false], ['delivered', 2, 1010, false],
  ]);
  assert.match(rows[2].reason!, /not connected/);
  actors.stop();
  await recorder.close();
});

test.run();
