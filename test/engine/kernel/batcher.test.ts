/**
 * The batching primitive on a simulated clock: size and time triggers, weights, both overflow
 * policies, retries with the shared backoff and their exhaustion, concurrency, flush and close
 * (including while a retry waits), and bad options.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exponentialBackoff } from '../../../engine/kernel/backoff.ts';
import { Batcher, type BatcherOptions } from '../../../engine/kernel/Batcher.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';

interface Write {
  items: string[];
  at: number;
  resolve(): void;
  reject(error: unknown): void;
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function track(promise: Promise<void>) {
  const state: { status: 'pending' | 'resolved' | 'rejected'; error?: FleetError } = { status: 'pending' };
  promise.then(() => { state.status = 'resolved'; }, (error: FleetError) => { state.status = 'rejected'; state.error = error; });
  return state;
}

function setup(options: Partial<BatcherOptions<string>> = {}) {
  const clock = new SimulatedClock(1_000);
  const writes: Write[] = [];
  const failed: [string[], string][] = [];
  const batcher = new Batcher<string>({
    clock, maxItems: 3, maxDelayMs: 50, maxPending: 6, overflow: 'wait',
    write: (items) => new Promise((resolve, reject) => writes.push({ items: [...items], at: clock.now(), resolve, reject })),
    onFailed: (items, error) => failed.push([items, error.code]),
    ...options,
  });
  return { clock, writes, failed, batcher };
}

test('a batch starts when maxItems are held, or maxDelayMs after its oldest item', async () => {
  const { clock, writes, batcher } = setup({ concurrency: 2 });
  const a = track(batcher.add('a'));
  batcher.add('b');
  batcher.add('c');
  assert.equal(writes.map((w) => w.items), [['a', 'b', 'c']]);
  clock.advance(10);
  batcher.add('d');
  clock.advance(49);
  assert.is(writes.length, 1);
  clock.advance(1);
  assert.equal(writes[1], { ...writes[1], items: ['d'], at: 1_060 });
  writes[0].resolve();
  await settle();
  assert.is(a.status, 'resolved');
  assert.is(batcher.pending, 1);
  assert.is(clock.pending, 0);
});

test('immediateBelow: a trickle with nothing being written starts in the next turn, with what that turn added', async () => {
  const { clock, writes, batcher } = setup({ immediateBelow: 3, maxItems: 10, maxPending: 20 });
  batcher.add('a');
  batcher.add('b');
  assert.is(writes.length, 0, 'not within the turn that added them');
  clock.advance(0);
  assert.equal(writes.map((w) => w.items), [['a', 'b']]);
  assert.is(writes[0].at, 1_000);
  // While that is written, items wait for it (group commit), then go at once while still light.
  batcher.add('c');
  clock.advance(30);
  assert.is(writes.length, 1);
  writes[0].resolve();
  await settle();
  clock.advance(0);
  assert.equal(writes[1], { ...writes[1], items: ['c'], at: 1_030 });
});

test('immediateBelow: what piles up past it while a batch is written waits for maxDelayMs as without it', async () => {
  const { clock, writes, batcher } = setup({ immediateBelow: 3, maxItems: 10, maxPending: 20 });
  batcher.add('a');
  clock.advance(0);
  for (const item of ['b', 'c', 'd', 'e']) batcher.add(item);
  writes[0].resolve();
  await settle();
  clock.advance(0);
  assert.is(writes.length, 1, 'four held: a flow, batched by time');
  clock.advance(49);
  assert.is(writes.length, 1);
  clock.advance(1);
  assert.equal(writes[1], { ...writes[1], items: ['b', 'c', 'd', 'e'], at: 1_050 });
});

test('immediateSpacingMs: batches started for a trickle start at least that far apart', async () => {
  const { clock, writes, batcher } = setup({ immediateBelow: 3, immediateSpacingMs: 20, maxItems: 10, maxPending: 20 });
  batcher.add('a');
  clock.advance(0);
  writes[0].resolve();
  await settle();
  clock.advance(5);
  batcher.add('b');
  clock.advance(14);
  assert.is(writes.length, 1);
  clock.advance(1);
  assert.equal(writes[1], { ...writes[1], items: ['b'], at: 1_020 });
  writes[1].resolve();
  await settle();
  clock.advance(100);
  batcher.add('c');
  clock.advance(0);
  assert.equal(writes[2], { ...writes[2], items: ['c'], at: 1_120 }, 'a trickle after a pause goes at once');
});

test('weights count towards maxItems and maxPending; a heavier item goes alone', async () => {
  const { writes, batcher } = setup({ weight: (s) => s.length, maxPending: 100 });
  batcher.add('xx');
  batcher.add('yy'); // 4 >= 3: starts, but the batch stops before passing maxItems
  assert.equal(writes.map((w) => w.items), [['xx']]);
  writes[0].resolve();
  await settle();
  batcher.add('zzzzz');
  writes[1].resolve();
  await settle();
  assert.equal(writes.map((w) => w.items), [['xx'], ['yy'], ['zzzzz']]);
});

test('overflow "wait": items wait unaccepted and in order until earlier batches land', async () => {
  const { writes, batcher } = setup({ maxItems: 3, maxPending: 4 });
  for (const s of ['a', 'b', 'c', 'd', 'e', 'f']) batcher.add(s);
  assert.is(batcher.pending, 4);
  assert.is(batcher.waiting, 2);
  writes[0].resolve();
  await settle();
  assert.is(batcher.waiting, 0);
  assert.equal(writes.map((w) => w.items), [['a', 'b', 'c'], ['d', 'e', 'f']]);
});

test('overflow "refuse": past maxPending add rejects with BACKPRESSURE and offer returns false', async () => {
  const { writes, batcher } = setup({ overflow: 'refuse', maxPending: 2, maxItems: 10 });
  assert.ok(batcher.offer('a'));
  batcher.add('b');
  const refused = track(batcher.add('c'));
  assert.is(batcher.offer('d'), false);
  await settle();
  assert.is(refused.error?.code, 'BACKPRESSURE');
  assert.is(batcher.pending, 2);
  const flushed = batcher.flush();
  writes[0].resolve();
  await flushed;
  assert.equal(writes.map((w) => w.items), [['a', 'b']]);
  assert.ok(batcher.offer('e'), 'room again once written');
});

test('addThen: one call per item after its batch settled, in order, never synchronously; beside add()', async () => {
  const { writes, batcher } = setup({ maxPending: 4, overflow: 'refuse' });
  const calls: string[] = [];
  const then = (name: string) => (error?: FleetError) => calls.push(error === undefined ? name : `${name}:${error.code}`);
  batcher.addThen('a', then('a'));
  const b = track(batcher.add('b'));
  batcher.addThen('c', then('c'));
  assert.equal(writes.map((w) => w.items), [['a', 'b', 'c']]);
  batcher.addThen('d', then('d'));
  batcher.addThen('e', then('e'));
  assert.equal(calls, [], 'refusal not reported synchronously');
  await settle();
  assert.equal(calls, ['e:BACKPRESSURE']);
  writes[0].resolve();
  assert.equal(calls, ['e:BACKPRESSURE'], 'not from inside the settlement');
  await settle();
  assert.equal(calls, ['e:BACKPRESSURE', 'a', 'c']);
  assert.is(b.status, 'resolved');
});

test('addThen: a failed batch reports its error to every callback once; closed refuses later', async () => {
  const { clock, writes, batcher } = setup({ maxItems: 2 });
  const calls: string[] = [];
  const then = (name: string) => (error?: FleetError) => calls.push(error === undefined ? name : `${name}:${error.code}`);
  batcher.addThen('a', then('a'));
  batcher.addThen('b', then('b'));
  writes[0].reject(new FleetError('INVALID_STATE', 'no'));
  await settle();
  assert.equal(calls, ['a:INVALID_STATE', 'b:INVALID_STATE']);
  batcher.addThen('c', then('c'));
  const closed = batcher.close();
  batcher.addThen('late', then('late'));
  assert.equal(calls.length, 2);
  await settle();
  assert.equal(calls, ['a:INVALID_STATE', 'b:INVALID_STATE', 'late:CLOSED']);
  clock.advance(50);
  writes[1].resolve();
  await closed;
  assert.equal(calls, ['a:INVALID_STATE', 'b:INVALID_STATE', 'late:CLOSED', 'c']);
});

test('retriable failures are retried on the backoff; exhaustion fails the batch once', async () => {
  const backoff = exponentialBackoff({ initialMs: 100, maxMs: 150 });
  const { clock, writes, failed, batcher } = setup({ retry: { backoff, maxRetries: 2 } });
  const a = track(batcher.add('a'));
  clock.advance(50);
  for (const wait of [100, 150]) {
    const before = writes.length;
    writes.at(-1)!.reject(new FleetError('UNAVAILABLE', 'down'));
    await settle();
    clock.advance(wait - 1);
    assert.is(writes.length, before, 'no retry before the backoff');
    clock.advance(1);
    assert.is(writes.length, before + 1);
  }
  assert.equal(writes.map((w) => w.at), [1_050, 1_150, 1_300]);
  writes[2].reject(new FleetError('TIMEOUT', 'still down'));
  await settle();
  assert.is(a.error?.code, 'TIMEOUT');
  assert.equal(failed, [[['a'], 'TIMEOUT']]);
  assert.is(clock.pending, 0);
});

test('non-retriable and non-FleetError failures fail the batch at once, as INTERNAL for the latter', async () => {
  const { clock, writes, failed, batcher } = setup({ retry: { backoff: exponentialBackoff({ initialMs: 1, maxMs: 1 }), maxRetries: 5 }, maxItems: 1 });
  const a = track(batcher.add('a'));
  const b = track(batcher.add('b'));
  writes[0].reject(new Error('boom'));
  await settle();
  writes[1].reject(new FleetError('PAYLOAD_TOO_LARGE', 'no'));
  await settle();
  clock.advance(100);
  assert.is(writes.length, 2);
  assert.equal([a.error?.code, b.error?.code], ['INTERNAL', 'PAYLOAD_TOO_LARGE']);
  assert.equal(failed.map(([, code]) => code), ['INTERNAL', 'PAYLOAD_TOO_LARGE']);
});

test('a write that throws synchronously fails its batch and the batcher goes on', async () => {
  let calls = 0;
  const clock = new SimulatedClock();
  const batcher = new Batcher<number>({ clock, maxItems: 1, maxDelayMs: 0, maxPending: 10, overflow: 'wait', write: (items) => {
    if (calls++ === 0) throw new FleetError('CLOSED', 'gone');
    return Promise.resolve();
  } });
  const a = track(batcher.add(1));
  const b = track(batcher.add(2));
  await settle();
  assert.equal([a.error?.code, b.status], ['CLOSED', 'resolved']);
});

test('flush starts what waits for its delay and resolves once everything added so far settled', async () => {
  const { writes, batcher } = setup({ maxItems: 10, maxPending: 10 });
  batcher.add('a');
  let flushed = false;
  batcher.flush().then(() => { flushed = true; });
  batcher.add('b'); // added during the flush: started at once too, but not waited for
  assert.equal(writes.map((w) => w.items), [['a']]);
  writes[0].resolve();
  await settle();
  assert.ok(flushed);
  assert.equal(writes.map((w) => w.items), [['a'], ['b']]);
});

test('close refuses new items; a retry waiting its backoff keeps it by default', async () => {
  const { clock, writes, batcher } = setup({ retry: { backoff: exponentialBackoff({ initialMs: 1000, maxMs: 1000 }), maxRetries: 3 } });
  const a = track(batcher.add('a'));
  clock.advance(50);
  writes[0].reject(new FleetError('UNAVAILABLE', 'down'));
  await settle();
  let closed = false;
  batcher.close().then(() => { closed = true; });
  const late = track(batcher.add('late'));
  assert.is(batcher.offer('late'), false);
  await settle();
  assert.is(late.error?.code, 'CLOSED');
  assert.is(writes.length, 1, 'the retry waits for its delay');
  clock.advance(1000);
  writes[1].resolve();
  await settle();
  assert.is(a.status, 'resolved');
  assert.ok(closed);
});

test('close with retries: false tries a waiting retry at once, and once only', async () => {
  const { clock, writes, failed, batcher } = setup({ retry: { backoff: exponentialBackoff({ initialMs: 1000, maxMs: 1000 }), maxRetries: Infinity } });
  const a = track(batcher.add('a'));
  clock.advance(50);
  writes[0].reject(new FleetError('UNAVAILABLE', 'down'));
  await settle();
  const closed = batcher.close({ retries: false });
  assert.is(writes.length, 2, 'tried at once');
  writes[1].reject(new FleetError('UNAVAILABLE', 'still down'));
  await closed;
  assert.is(a.error?.code, 'UNAVAILABLE');
  assert.equal(failed, [[['a'], 'UNAVAILABLE']]);
  assert.is(clock.pending, 0);
});

test('concurrency bounds the batches written at once', async () => {
  const { writes, batcher } = setup({ maxItems: 1, maxPending: 10, concurrency: 2 });
  for (const s of ['a', 'b', 'c']) batcher.add(s);
  assert.is(writes.length, 2);
  writes[1].resolve();
  await settle();
  assert.equal(writes.map((w) => w.items), [['a'], ['b'], ['c']]);
});

test('bad options are refused', () => {
  const base = { clock: new SimulatedClock(), write: async () => {}, maxItems: 1, maxDelayMs: 0, maxPending: 1, overflow: 'wait' as const };
  assert.throws(() => new Batcher({ ...base, maxItems: 0 }), /maxItems/);
  assert.throws(() => new Batcher({ ...base, maxItems: -3 }), /maxItems/);
  assert.throws(() => new Batcher({ ...base, maxPending: 2.5 }), /maxPending/);
  assert.throws(() => new Batcher({ ...base, maxDelayMs: -1 }), /maxDelayMs/);
  assert.throws(() => new Batcher({ ...base, concurrency: 0 }), /concurrency/);
  assert.throws(() => new Batcher({ ...base, immediateBelow: -1 }), /immediateBelow/);
  assert.throws(() => new Batcher({ ...base, immediateSpacingMs: Number.NaN }), /immediateSpacingMs/);
  assert.throws(() => new Batcher({ ...base, name: 'mine', retry: { backoff: () => 0, maxRetries: -1 } }), /mine: maxRetries/);
  new Batcher({ ...base, maxDelayMs: 0 }); // zero delay: batches start at once
});

test('maxDelayMs 0 starts every item at once', async () => {
  const { writes, batcher } = setup({ maxDelayMs: 0, maxItems: 10, concurrency: 10 });
  batcher.add('a');
  batcher.add('b');
  assert.equal(writes.map((w) => w.items), [['a'], ['b']]);
});

test.run();
