import { LocalRegistrationGeneration } from '../../src/entities/generation-sync';

/**
 * The shared registration generation (the counter in Redis), counting its
 * reads. `hold` stalls them: a read takes the value when it starts and
 * answers once `hold` resolves (a slow network, or a Redis that does not
 * answer), so a read started before a bump answers the old value.
 */
export function countedGeneration() {
  let inner = new LocalRegistrationGeneration();
  const counter = {
    reads: 0,
    hold: undefined as Promise<void> | undefined,
    async current() {
      counter.reads++;
      const value = await inner.current();
      if (counter.hold) await counter.hold;
      return value;
    },
    bump: () => inner.bump(),
    /** Starts again from nothing, as a Redis server that came back empty does. */
    reset() {
      inner = new LocalRegistrationGeneration();
    },
  };
  return counter;
}

/** A promise the test opens: whatever awaits `opened` waits until `open()`. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
