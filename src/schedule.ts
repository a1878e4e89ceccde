import cron from 'node-cron';

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
 * Runs `task` every `ms`, never two runs at once: a run that takes longer
 * than the period delays the next. Whole seconds that divide a minute run on
 * node-cron, as a named schedule a person can read ("every 3 s" is a
 * seconds field of star-slash-3); sub-second ticks, which cron cannot
 * express, and other periods run on a timer chain. `task` handles its own
 * errors: a rejection here is dropped.
 */
export function every(name: string, ms: number, task: () => unknown): Periodic {
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
  if (Number.isInteger(seconds) && seconds >= 1 && 60 % seconds === 0) {
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
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  const loop = async () => {
    await run();
    if (started) timer = setTimeout(loop, ms);
  };
  return {
    runNow: run,
    start() {
      if (started) return;
      started = true;
      timer = setTimeout(loop, ms);
    },
    async stop() {
      started = false;
      clearTimeout(timer);
      await running;
    },
  };
}
