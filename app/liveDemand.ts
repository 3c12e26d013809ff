/**
 * Live events of an embedded service with edge workers are built by the primary (its engine stores
 * the states) and read by each worker's LiveHub. A single-process service builds them only while its
 * hub wants them (LiveHub.wantsEvents: a subscriber, a states feed, or one that may resume); here
 * each worker reports its hub's answer when it changes, and the primary builds events while any
 * worker wants them. Building and writing them for nobody, and handing each batch to every worker,
 * cost the primary about 40 % of its CPU per uplink (bench/http.bench.ts workers).
 *
 * A worker reports at once when its hub gets a subscription or a states feed (LiveHub.onDemand),
 * and otherwise looks every `pollMs` (the resume window ending, an MQTT client starting or
 * stopping to follow a feed). Its hub marks the gap whenever it answers no, so a cursor from
 * before a gap gets `reset`, as in one process.
 */
import type { Clock, TimerHandle } from '../engine/kernel/clock.ts';
import type { LiveHub } from '../engine/live/LiveHub.ts';

/** The note a worker sends on the cluster channel (app/workerChannel.ts): a boolean. */
export const LIVE_WANTED = 'live-wanted';

/** In the primary: which workers want live events now. */
export class WorkersLiveDemand {
  readonly #wanting = new Set<number>();

  wanted(): boolean {
    return this.#wanting.size > 0;
  }

  report(worker: number, wanted: boolean): void {
    if (wanted) this.#wanting.add(worker);
    else this.#wanting.delete(worker);
  }

  /** A worker that exited wants nothing. */
  forget(worker: number): void {
    this.#wanting.delete(worker);
  }
}

/** In a worker: tells the primary (`send`) whether its hub wants events, whenever that changes. Returns the stopper. */
export function reportLiveDemand(hub: Pick<LiveHub, 'wantsEvents' | 'onDemand'>, send: (wanted: boolean) => void, clock: Clock, pollMs = 50): () => void {
  let reported: boolean | undefined;
  const look = () => {
    const wanted = hub.wantsEvents();
    if (wanted !== reported) send((reported = wanted));
  };
  look();
  const stopListening = hub.onDemand(look);
  let timer: TimerHandle | undefined;
  const poll = () => {
    look();
    timer = clock.setTimeout(poll, pollMs);
  };
  timer = clock.setTimeout(poll, pollMs);
  return () => {
    stopListening();
    timer?.cancel();
  };
}
