import type { Clock } from './clock';

/**
 * Runs `task` (which handles its own errors) every `ms` of `clock`, never two runs at once, on one chain of
 * `clock.sleep` so a fake clock drives it as the system one does. `ms` may be a function asked before each wait:
 * a loop with nothing to do for a while sleeps that long (an idle instance's cost is mostly its wake-ups).
 */
export function every(ms: number | (() => number), task: () => unknown, clock: Clock) {
  const period = typeof ms === 'number' ? () => ms : ms;
  let running: Promise<unknown> | undefined;
  const run = async () => {
    if (running) return;
    running = Promise.resolve()
      .then(task)
      .catch(() => undefined);
    await running;
    running = undefined;
  };
  // Aborting a wait's own controller ends the wait (wake) or, with `stopped` set, the chain.
  interface Chain {
    stopped: boolean;
    wait?: AbortController;
    done?: Promise<void>;
  }
  let chain: Chain | undefined;
  const loop = async (self: Chain) => {
    // Stopped is checked before each wait too: a stop() during a run must not wait out one more period.
    while (!self.stopped) {
      const wait = (self.wait = new AbortController());
      await clock.sleep(untilAligned(period(), clock.monotonic()), wait.signal);
      // Ended early: woken (the period is asked again) or stopped (the loop ends).
      if (wait.signal.aborted) continue;
      await run();
    }
  };
  return {
    /** Runs the task now, unless a run is under way (`stop()` waits for it too). */
    runNow: run,
    /** Ends the wait under way: the period is asked for again and waited from now. */
    wake: () => chain?.wait?.abort(),
    /** Starts the schedule (a no-op when started). */
    start() {
      if (chain) return;
      chain = { stopped: false };
      chain.done = loop(chain);
    },
    /** Stops the schedule and waits for a run under way. */
    async stop() {
      const stopping = chain;
      chain = undefined;
      if (stopping) {
        stopping.stopped = true;
        stopping.wait?.abort();
      }
      await stopping?.done;
      await running;
    },
  };
}
/** A task run on a schedule, never overlapping itself. */
export type Periodic = ReturnType<typeof every>;

/**
 * The wait from `now` to the multiple of the period's grain (1 s from 1 s up, 100 ms from 100 ms up) nearest
 * `now + ms`, the period kept on average: loops then wake together, once a second for all (a wake-up costs
 * 0.1–0.2 ms of CPU on a small VM).
 */
export function untilAligned(ms: number, now: number): number {
  const grain = ms >= 1000 ? 1000 : ms >= 100 ? 100 : 0;
  if (grain === 0) return ms;
  const at = Math.max(Math.round((now + ms) / grain) * grain, now + grain / 2);
  return at - now;
}

/** Runs `task(dueAt)` every `ms` on {@link untilAligned}'s grid with unref'd timers: process timers outside a service. */
export function onAligned(ms: number, task: (dueAt: number) => void, now: () => number): void {
  const next = () => {
    const wait = untilAligned(ms, now());
    const dueAt = now() + wait;
    setTimeout(() => {
      task(dueAt);
      next();
    }, wait).unref();
  };
  next();
}

export interface ActivityRoundOptions<T> {
  /** The items of a new round, listed from the registry once a round. */
  list(): T[];
  keyOf(item: T): string;
  /** The current item of an active key, or undefined when it is gone (it then stops being active). */
  lookup(key: string): T | undefined;
  /** Items of the round one batch reads, going round. */
  idleBatch: number;
  /** Active items one batch reads at most. */
  activeBatch: number;
  /** How long a touched key stays active. */
  activeMs: number;
  /** The clock `activeMs` is measured on. */
  now(): number;
}

/**
 * Batches of a loop whose cost follows activity (refill sweep, sampler): every key touched in the last `activeMs`
 * (up to `activeBatch`) and the next `idleBatch` of a round over all, so an idle key is read once a round.
 */
export class ActivityRound<T> {
  private round: T[] = [];
  private cursor = 0;
  /** Key → when it was last touched. */
  private readonly active = new Map<string, number>();

  constructor(private readonly options: ActivityRoundOptions<T>) {}

  /** The key was seen in use (at `at`, default now): it is in every batch from the next one on. */
  touch(key: string, at = this.options.now()): void {
    this.active.set(key, at);
  }

  /** Whether the key is read every batch (as of the last `next()`, or touched since). */
  isActive(key: string): boolean {
    return this.active.has(key);
  }

  /** The next batch; `listed`: the new round's items when it started one; `rounds`: batches a round takes. */
  next(): { items: T[]; listed: T[] | undefined; rounds: number } {
    const { options: o } = this;
    let listed: T[] | undefined;
    if (this.cursor >= this.round.length) {
      this.round = listed = o.list();
      this.cursor = 0;
    }
    const batch = new Map(
      this.round.slice(this.cursor, this.cursor + o.idleBatch).map((item) => [o.keyOf(item), item]),
    );
    this.cursor += o.idleBatch;
    const now = o.now();
    let taken = 0;
    for (const [key, since] of this.active) {
      const item = o.lookup(key);
      if (now - since > o.activeMs || item === undefined) {
        this.active.delete(key);
        continue;
      }
      if (taken++ >= o.activeBatch) break;
      batch.set(key, item);
    }
    return { items: [...batch.values()], listed, rounds: Math.max(1, Math.ceil(this.round.length / o.idleBatch)) };
  }
}
