import cron from 'node-cron';
import { type Clock, systemClock } from './clock';

/** A task run on a schedule, never overlapping itself. */
export interface Periodic {
  /** Starts the schedule (a no-op when started). */
  start(): void;
  /** Runs the task now, unless a run is under way (`stop()` waits for it too). */
  runNow(): Promise<void>;
  /** Stops the schedule and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * Runs `task` every `ms` of `clock`, never two runs at once: a run that takes
 * longer than the period delays the next. On the system clock, whole seconds
 * that divide a minute run on node-cron, as a named schedule a person can
 * read ("every 3 s" is a seconds field of star-slash-3); node-cron reads the
 * process's own time, so sub-second ticks (which cron cannot express), other
 * periods and any other clock (a test's fake one) run on a chain of
 * `clock.sleep`. `task` handles its own errors: a rejection here is dropped.
 */
export function every(name: string, ms: number, task: () => unknown, clock: Clock): Periodic {
  let running: Promise<unknown> | undefined;
  const run = async () => {
    if (running) return;
    running = Promise.resolve()
      .then(task)
      .catch(() => undefined);
    await running;
    running = undefined;
  };
  const seconds = ms / 1000;
  if (clock === systemClock && Number.isInteger(seconds) && seconds >= 1 && 60 % seconds === 0) {
    let job: ReturnType<typeof cron.schedule> | undefined;
    return {
      runNow: run,
      start() {
        job ??= cron.schedule(seconds === 1 ? '* * * * * *' : `*/${seconds} * * * * *`, run, { name });
      },
      async stop() {
        await job?.destroy();
        job = undefined;
        await running;
      },
    };
  }
  // Aborting the chain's controller ends its pending sleep, so nothing holds the process after stop().
  let chain: { abort: AbortController; done: Promise<void> } | undefined;
  const loop = async (signal: AbortSignal) => {
    for (;;) {
      await clock.sleep(ms, signal);
      if (signal.aborted) return;
      await run();
    }
  };
  return {
    runNow: run,
    start() {
      if (chain) return;
      const abort = new AbortController();
      chain = { abort, done: loop(abort.signal) };
    },
    async stop() {
      const stopping = chain;
      chain = undefined;
      stopping?.abort.abort();
      await stopping?.done;
      await running;
    },
  };
}
