/**
 * Group commit across the partitions of one log: the partitions with queued records flush together,
 * in rounds, and a partition that gets records while a round is in flight waits for the next round
 * instead of starting a flush of its own at once.
 *
 * Why: a durable write costs the process far more than the records in it (a system call through the
 * thread pool and the device's cache flush, ~0.1–0.3 ms of CPU here), so what matters is how many
 * records each one carries. Partitions flushing independently each start again the moment their own
 * write returns, so a fleet's uplinks, spread over every partition by their keys, reach the disk in
 * many small writes. In rounds, everything that arrived during one round's writes goes into the
 * next round's. With a journal (RoundJournal.ts) the whole round is one durable write; without one,
 * one per partition.
 *
 * A round starts one event-loop turn after the first record queued in an idle log (appends made in
 * the same turn share it), or `lingerMs` after it; the next round starts in the turn the previous
 * one is done, without a linger, but in the turn's check phase (setImmediate) rather than straight
 * from its completion: the requests and messages read in that turn's I/O phase join it. Straight
 * from the completion they waited for the round after: 64 HTTP uplinks in flight took ~20 % more
 * rounds for the same records (each round costs the loop's thread a hand-off to the thread pool,
 * ~25 µs on a small VM, plus one write per partition). A full journal is checkpointed between two rounds.
 * A round none of whose records waited for a journal write in flight is one of an idle log: the
 * journal may write it in the loop's thread (RoundJournal.commit).
 */
import type { Clock, TimerHandle } from '../../engine/kernel/clock.ts';
import type { RoundJournal } from './RoundJournal.ts';

/** A partition as the rounds see it: runs its queued records' flush, resolves when it is done. */
export interface RoundMember {
  runQueued(journal?: RoundJournal): Promise<void>;
}

export class FlushRounds {
  readonly #clock: Clock;
  readonly #lingerMs: number;
  readonly #journal: RoundJournal | undefined;
  #queued = new Set<RoundMember>();
  #running = false;
  /** Records were queued while a round's journal write was in flight: the next round is not one of an idle log. */
  #behindWrite = false;
  #timer: TimerHandle | undefined;

  constructor(clock: Clock, lingerMs: number, journal?: RoundJournal) {
    this.#clock = clock;
    this.#lingerMs = lingerMs;
    this.#journal = journal;
  }

  /** `member` has records for the next round. */
  request(member: RoundMember): void {
    this.#queued.add(member);
    if (this.#journal?.writing) this.#behindWrite = true;
    if (this.#running || this.#timer !== undefined) return;
    if (this.#lingerMs > 0) {
      this.#timer = this.#clock.setTimeout(() => this.#start(), this.#lingerMs);
    } else {
      this.#startSoon();
    }
  }

  /** Starts a round in this event-loop turn's check phase: after the I/O callbacks of the turn have queued their records. */
  #startSoon(): void {
    const immediate = setImmediate(() => this.#start());
    this.#timer = { cancel: () => clearImmediate(immediate) };
  }

  #start(): void {
    this.#timer = undefined;
    if (this.#queued.size === 0) return;
    this.#running = true;
    const journal = this.#journal;
    if (journal?.full) {
      // A failed checkpoint fails the journal: the round's members are refused by it.
      void journal.checkpoint().catch(() => undefined).then(() => this.#run());
    } else {
      this.#run();
    }
  }

  #run(): void {
    const members = this.#queued;
    // None of its records waited for a journal write: the log was idle (RoundJournal.commit may then
    // write it in the loop's thread).
    const idle = !this.#behindWrite;
    this.#queued = new Set();
    this.#behindWrite = false;
    const flushes: Promise<void>[] = [];
    for (const member of members) flushes.push(member.runQueued(this.#journal));
    void this.#journal?.commit(idle);
    void Promise.allSettled(flushes).then(() => {
      this.#running = false;
      if (this.#queued.size > 0) this.#startSoon();
    });
  }
}
