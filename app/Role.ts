/** A part of a process the composition root starts and stops: the engine, the edges, the commands. */
export interface Role {
  start(): Promise<void>;
  /** Stops taking work, finishes what is in hand, closes what it opened. */
  stop(): Promise<void>;
  /** Started and, for the engine, holding partitions and not stopped for good (GET /ready). */
  ready(): boolean;
}
