import type { Logger } from '../logger';
import { errorMessage } from '../errors';

/** What a builder made, and how to close it (nothing to close: no `close`). */
export interface Built<T> {
  readonly value: T;
  close?(): Promise<void> | void;
}

/** Everything the composition root opened, closed newest first: on `stop()`, and when start-up fails half way. */
export class Resources {
  private readonly closers: { name: string; close: () => Promise<void> | void }[] = [];

  constructor(private readonly log: Logger) {}

  add<T>(name: string, built: Built<T>): T {
    if (built.close) this.closers.push({ name, close: built.close.bind(built) });
    return built.value;
  }

  /** Closes everything added, newest first; a failing close is logged and the rest still close. */
  async closeAll(): Promise<void> {
    for (let next = this.closers.pop(); next; next = this.closers.pop()) {
      try {
        await next.close();
      } catch (err) {
        this.log.warn({ resource: next.name, err: errorMessage(err) }, 'error while closing');
      }
    }
  }
}
