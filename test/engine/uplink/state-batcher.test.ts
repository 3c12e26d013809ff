import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { StateBatcher, type StateBatcherOptions } from '../../../engine/uplink/pipeline/StateBatcher.ts';
import type { StateRow } from '../../../schemas/messages.ts';

interface Call {
  rows: StateRow[];
  at: number;
  resolve(): void;
  reject(error: unknown): void;
}

/** A store whose appends settle only when the test says so. */
class FakeStore {
  calls: Call[] = [];
  readonly #clock: SimulatedClock;
  constructor(clock: SimulatedClock) {
    this.#clock = clock;
  }
  append(rows: readonly StateRow[]): Promise<void> {
    return new Promise((resolve, reject) => this.calls.push({ rows: [...rows], at: this.#clock.now(), resolve, reject }));
  }
  get last(): Call {
    return this.calls[this.calls.length - 1];
  }
}

/** Lets promise callbacks run (no time passes on any clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function rows(n: number, prefix = 'r'): StateRow[] {
  return Array.from({ length: n }, (_, i) => ({ deviceId: 'd1', asset: 'a', ts: i, receivedAt: i, value: i, uplinkId: `${prefix}${i}` }));
}

/** Tracks a promise's outcome without awaiting it. */
function track(promise: Promise<void>) {
  const state: { status: 'pending' | 'resolved' | 'rejected'; error?: FleetError } = { status: 'pending' };
  promise.then(
    () => { state.status = 'resolved'; },
    (error: FleetError) => { state.status = 'rejected'; state.error = error; },
  );
  return state;
}

function setup(options: Partial<StateBatcherOptions> = {}) {
  const clock = new SimulatedClock(1_000);
  const store = new FakeStore(clock);
  const batcher = new StateBatcher({ store, clock, maxRows: 5, maxDelayMs: 50, ...options });
  /** Moves the clock on by `ms`, then lets what that set off run. */
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { clock, store, batcher, advance };
}

test('empty appends resolve at once', async () => {
  const { store, batcher } = setup();
  await batcher.append([]);
  assert.is(store.calls.length, 0);
  assert.is(batcher.pendingRows, 0);
});

test('appendThen calls back once the rows are durable, or with the error; never synchronously', async () => {
  const { store, batcher } = setup();
  const calls: string[] = [];
  batcher.appendThen([], (error) => calls.push(`empty:${error?.code ?? 'ok'}`));
  batcher.appendThen(rows(5, 'a'), (error) => calls.push(`a:${error?.code ?? 'ok'}`));
  assert.equal(calls, []);
  await settle();
  assert.equal(calls, ['empty:ok']);
  assert.is(store.calls.length, 1);
  store.calls[0].resolve();
  await settle();
  assert.equal(calls, ['empty:ok', 'a:ok']);
  batcher.appendThen(rows(5, 'b'), (error) => calls.push(`b:${error?.code ?? 'ok'}`));
  store.last.reject(new FleetError('INVALID_STATE', 'refused'));
  await settle();
  assert.equal(calls, ['empty:ok', 'a:ok', 'b:INVALID_STATE']);
  await batcher.close();
  batcher.appendThen([], (error) => calls.push(`late:${error?.code ?? 'ok'}`));
  await settle();
  assert.equal(calls.at(-1), 'late:CLOSED');
});

test('flushes at once when maxRows rows are buffered, and resolves when the store has them', async () => {
  const { store, batcher } = setup();
  const a = track(batcher.append(rows(3, 'a')));
  const b = track(batcher.append(rows(2, 'b')));
  await settle();
  assert.is(store.calls.length, 1);
  assert.equal(store.calls[0].rows.map((r) => r.uplinkId), ['a0', 'a1', 'a2', 'b0', 'b1']);
  assert.is(a.status, 'pending');
  store.calls[0].resolve();
  await settle();
  assert.is(a.status, 'resolved');
  assert.is(b.status, 'resolved');
  assert.is(batcher.pendingRows, 0);
});

test('flushes maxDelayMs after the oldest row arrived', async () => {
  const { clock, store, batcher, advance } = setup();
  const a = track(batcher.append(rows(1, 'a')));
  clock.advance(30);
  const b = track(batcher.append(rows(1, 'b')));
  await advance(19);
  assert.is(store.calls.length, 0);
  await advance(1);
  assert.is(store.calls.length, 1);
  assert.is(store.calls[0].at, 1_050);
  assert.equal(store.calls[0].rows.map((r) => r.uplinkId), ['a0', 'b0']);
  store.calls[0].resolve();
  await settle();
  assert.equal([a.status, b.status], ['resolved', 'resolved']);
  assert.is(clock.pending, 0);
});

test('one batch in flight at a time; rows arriving meanwhile go in the next batch, in order', async () => {
  const { store, batcher, advance } = setup({ maxPendingRows: 100 });
  batcher.append(rows(5, 'a'));
  await settle();
  batcher.append(rows(2, 'b'));
  await advance(50); // b is overdue but the first batch has not landed
  assert.is(store.calls.length, 1);
  store.calls[0].resolve();
  await settle();
  assert.is(store.calls.length, 2);
  assert.equal(store.calls[1].rows.map((r) => r.uplinkId), ['b0', 'b1']);
});

test('a batch holds at most maxRows rows unless a single append is larger', async () => {
  const { store, batcher } = setup({ maxPendingRows: 100 });
  batcher.append(rows(3, 'a'));
  batcher.append(rows(3, 'b'));
  await settle();
  assert.is(store.calls.length, 1);
  assert.equal(store.calls[0].rows.length, 3);
  store.calls[0].resolve();
  await settle();
  batcher.append(rows(12, 'big'));
  store.calls[1].resolve();
  await settle();
  assert.equal(store.calls.map((c) => c.rows.length), [3, 3, 12]);
});

test('bounded: appends beyond maxPendingRows wait, unaccepted, until earlier rows land', async () => {
  const { store, batcher } = setup({ maxPendingRows: 6 });
  const a = track(batcher.append(rows(5, 'a')));
  const b = track(batcher.append(rows(1, 'b')));
  const c = track(batcher.append(rows(3, 'c')));
  const d = track(batcher.append(rows(1, 'd'))); // fits, but waits behind c to keep order
  await settle();
  assert.is(batcher.pendingRows, 6);
  assert.is(batcher.waitingRows, 4);
  assert.is(store.calls.length, 1);
  store.calls[0].resolve();
  await settle();
  assert.is(a.status, 'resolved');
  assert.is(c.status, 'pending');
  assert.is(batcher.waitingRows, 0);
  assert.is(store.calls.length, 2);
  assert.equal(store.calls[1].rows.map((r) => r.uplinkId), ['b0', 'c0', 'c1', 'c2', 'd0']);
  store.calls[1].resolve();
  await settle();
  assert.equal([b.status, c.status, d.status], ['resolved', 'resolved', 'resolved']);
});

test('an append larger than maxPendingRows is accepted alone rather than never', async () => {
  const { store, batcher } = setup({ maxPendingRows: 4 });
  const big = track(batcher.append(rows(9)));
  await settle();
  assert.is(store.calls.length, 1);
  store.calls[0].resolve();
  await settle();
  assert.is(big.status, 'resolved');
});

test('retriable store errors are retried with exponential backoff on the clock', async () => {
  const { store, batcher, advance } = setup({ retryInitialMs: 100, retryMaxMs: 250 });
  const a = track(batcher.append(rows(5)));
  await settle();
  store.last.reject(new FleetError('UNAVAILABLE', 'down'));
  await settle();
  await advance(99);
  assert.is(store.calls.length, 1);
  await advance(1);
  assert.is(store.calls.length, 2);
  store.last.reject(new FleetError('TIMEOUT', 'slow'));
  await settle();
  await advance(200);
  assert.is(store.calls.length, 3);
  store.last.reject(new FleetError('UNAVAILABLE', 'still down'));
  await settle();
  await advance(250); // 400 capped at retryMaxMs
  assert.is(store.calls.length, 4);
  assert.equal(store.calls.map((c) => c.at - 1_000), [0, 100, 300, 550]);
  assert.is(a.status, 'pending');
  store.last.resolve();
  await settle();
  assert.is(a.status, 'resolved');
});

test('non-retriable errors reject that batch only; the next batch goes through', async () => {
  const { store, batcher } = setup({ maxPendingRows: 100 });
  const a = track(batcher.append(rows(5, 'a')));
  await settle();
  const b = track(batcher.append(rows(5, 'b')));
  store.calls[0].reject(new FleetError('INTERNAL', 'bad data'));
  await settle();
  assert.is(a.status, 'rejected');
  assert.is(a.error?.code, 'INTERNAL');
  assert.is(store.calls.length, 2);
  store.calls[1].resolve();
  await settle();
  assert.is(b.status, 'resolved');
});

test('errors that are not FleetErrors reject as INTERNAL without retry', async () => {
  const { store, batcher, advance } = setup();
  const a = track(batcher.append(rows(5)));
  await settle();
  store.last.reject(new Error('boom'));
  await settle();
  await advance(10_000);
  assert.is(store.calls.length, 1);
  assert.is(a.error?.code, 'INTERNAL');
  assert.is(a.error?.retriable, false);
});

test('a store that throws synchronously rejects the batch instead of breaking the batcher', async () => {
  const clock = new SimulatedClock();
  let calls = 0;
  const batcher = new StateBatcher({ clock, maxRows: 1, store: { append: () => { calls++; throw new FleetError('CLOSED', 'gone'); } } });
  const a = track(batcher.append(rows(1)));
  await settle();
  assert.is(a.error?.code, 'CLOSED');
  assert.is(calls, 1);
});

test('after maxRetries the last retriable error rejects the batch', async () => {
  const { clock, store, batcher } = setup({ maxRetries: 2, retryInitialMs: 10 });
  const a = track(batcher.append(rows(5)));
  for (let i = 0; i < 3; i++) {
    await settle();
    store.last.reject(new FleetError('UNAVAILABLE', `down ${i}`));
    await settle();
    clock.advance(1_000);
  }
  await settle();
  assert.is(store.calls.length, 3);
  assert.is(a.status, 'rejected');
  assert.is(a.error?.code, 'UNAVAILABLE');
  assert.is(a.error?.retriable, true);
  assert.is(a.error?.message, 'down 2');
});

test('flush writes at once and waits; close writes the rest and then refuses appends', async () => {
  const { store, batcher } = setup({ maxPendingRows: 100 });
  const a = track(batcher.append(rows(2, 'a')));
  let flushed = false;
  batcher.flush().then(() => { flushed = true; });
  await settle();
  assert.is(store.calls.length, 1);
  assert.is(flushed, false);
  store.calls[0].resolve();
  await settle();
  assert.is(flushed, true);
  assert.is(a.status, 'resolved');

  const b = track(batcher.append(rows(1, 'b')));
  let closed = false;
  batcher.close().then(() => { closed = true; });
  const late = track(batcher.append(rows(1, 'late')));
  await settle();
  assert.is(late.error?.code, 'CLOSED');
  assert.is(store.calls.length, 2);
  store.calls[1].resolve();
  await settle();
  assert.is(b.status, 'resolved');
  assert.is(closed, true);
});

test('options are validated', () => {
  const clock = new SimulatedClock();
  const store = { append: async () => {} };
  assert.throws(() => new StateBatcher({ store, clock, maxRows: 0 }), /maxRows/);
  assert.throws(() => new StateBatcher({ store, clock, maxPendingRows: 1.5 }), /maxPendingRows/);
  assert.throws(() => new StateBatcher({ store, clock, maxDelayMs: -1 }), /maxDelayMs/);
});

test.run();
