import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FlushRounds, type RoundMember } from '../../../adapters/local-log/FlushRounds.ts';
import type { RoundJournal } from '../../../adapters/local-log/RoundJournal.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';

/** Members called in one synchronous run are one round (FlushRounds runs a round's members in one go). */
let roundOpen = false;

/** A partition whose flushes finish when the test says; records the rounds it ran in. */
class Member implements RoundMember {
  readonly name: string;
  readonly log: string[][];
  #finish: (() => void) | undefined;
  constructor(name: string, log: string[][]) {
    this.name = name;
    this.log = log;
  }
  runQueued(): Promise<void> {
    if (!roundOpen) {
      this.log.push([]);
      roundOpen = true;
      queueMicrotask(() => (roundOpen = false));
    }
    this.log[this.log.length - 1].push(this.name);
    return new Promise((resolve) => (this.#finish = resolve));
  }
  finish(): void {
    this.#finish?.();
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('flush rounds: what callbacks of the turn a round finishes in queue joins the next round together', async () => {
  const log: string[][] = [];
  const rounds = new FlushRounds(systemClock, 0);
  const a = new Member('a', log);
  const b = new Member('b', log);
  const c = new Member('c', log);
  rounds.request(a);
  await turn();
  assert.equal(log, [['a']]);
  rounds.request(a); // a has more while its round is in flight
  // Two callbacks of the same timers phase: the first finishes the round, the second queues b and c
  // (as socket reads handled in the I/O phase after a journal write's completion do).
  await new Promise<void>((resolve) => {
    setTimeout(() => a.finish(), 0);
    setTimeout(() => {
      rounds.request(b);
      rounds.request(c);
      resolve();
    }, 0);
  });
  await turn();
  assert.equal(log, [['a'], ['a', 'b', 'c']], 'b and c share the round a started again in');
  a.finish();
  b.finish();
  c.finish();
  await turn();
  assert.equal(log.length, 2, 'nothing queued: no further round');
});

test('flush rounds: a member queued while a round runs waits for it, and the next starts without a linger', async () => {
  const log: string[][] = [];
  const rounds = new FlushRounds(systemClock, 50);
  const a = new Member('a', log);
  const b = new Member('b', log);
  const started = performance.now();
  rounds.request(a);
  await new Promise((resolve) => setTimeout(resolve, 70));
  assert.equal(log, [['a']], 'the first round after lingerMs');
  rounds.request(b);
  await turn();
  assert.equal(log, [['a']], 'b waits for the round in flight');
  const finished = performance.now();
  a.finish();
  await turn();
  await turn();
  assert.equal(log, [['a'], ['b']]);
  assert.ok(performance.now() - finished < 40, 'the next round does not wait lingerMs');
  assert.ok(finished - started >= 50);
  b.finish();
});

/** The journal as the rounds see it: whether a write is in flight, and what each commit was told. */
class FakeJournal {
  writing = false;
  readonly full = false;
  readonly commits: boolean[] = [];
  async commit(idle: boolean): Promise<void> {
    this.commits.push(idle);
  }
}

test('flush rounds: a round is idle for its journal unless one of its records was queued while a journal write was in flight', async () => {
  const log: string[][] = [];
  const journal = new FakeJournal();
  const rounds = new FlushRounds(systemClock, 0, journal as unknown as RoundJournal);
  const a = new Member('a', log);
  const b = new Member('b', log);
  const c = new Member('c', log);
  rounds.request(a);
  await turn();
  assert.equal(journal.commits, [true], 'the first round of an idle log');
  journal.writing = true; // its write is in flight
  rounds.request(b);
  journal.writing = false;
  a.finish();
  await turn();
  await turn();
  assert.equal(log, [['a'], ['b']]);
  assert.equal(journal.commits, [true, false], 'b waited for a journal write');
  rounds.request(c); // queued after that write returned, while b's round still runs
  b.finish();
  await turn();
  await turn();
  assert.equal(log, [['a'], ['b'], ['c']]);
  assert.equal(journal.commits, [true, false, true], 'c waited for no journal write');
  c.finish();
});

test.run();
