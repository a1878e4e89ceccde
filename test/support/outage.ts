import { expect } from 'vitest';
import { uniqueKey } from './configs';
import { register, takeIds } from './http';
import type { Instance } from './processes';
import { sleep } from './wait';

/**
 * A pool of 100-id segments, 1000 ids at most, no rate limit: a load needs
 * the database every few hundred ids, so an outage shows within a second.
 */
const SMALL_POOL = { step: 100, maxPoolSize: 1000, maxSizePerSecond: 0, maxSizePerTimes: 10 };

/** A sequential client taking ids until stopped: what it got, and every status it was answered. */
export interface Traffic {
  readonly ids: string[];
  readonly statuses: Map<number, number>;
  /** Stops it; fails the test if any answer was other than 200 or a 503 with Retry-After. */
  stop(): Promise<void>;
}

/**
 * One entity of a service process whose dependencies a test breaks (a
 * private redis-server or mariadbd stopped, frozen, made read-only), with
 * every id it handed out: the outage tests take through it, and end by
 * asserting no id came twice and nothing answered 500.
 */
export class WatchedEntity {
  readonly issued: string[] = [];

  constructor(
    readonly instance: Instance,
    readonly key: string,
    readonly secret: string,
  ) {}

  /** Takes 5 ids until the service answers 200 again; how long that took. */
  async servesAgain(timeoutMs = 30_000): Promise<number> {
    const started = Date.now();
    for (;;) {
      const res = await takeIds(this.instance.url, this.key, this.secret, 5).catch(() => undefined);
      if (res?.status === 200) {
        this.issued.push(...res.body.ids);
        return Date.now() - started;
      }
      if (Date.now() - started > timeoutMs)
        throw new Error(
          `no id within ${timeoutMs} ms; last ${res?.status} ${JSON.stringify(res?.body)}\n${this.instance.output().slice(-3000)}`,
        );
      await sleep(50);
    }
  }

  /** Takes what the pool holds, 5 at a time (as `expectUnavailable` asks), until it answers something else. */
  async drain(): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      const res = await takeIds(this.instance.url, this.key, this.secret, 5);
      if (res.status !== 200) return;
      this.issued.push(...res.body.ids);
    }
    throw new Error('the pool never ran dry');
  }

  /** Sends `n` takes; every one must answer 503 unavailable with Retry-After. */
  async expectUnavailable(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const res = await takeIds(this.instance.url, this.key, this.secret, 5);
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.error?.code).toBe('unavailable');
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    }
  }

  /** A client taking 10 ids at a time until stopped; 503s are expected while a dependency is down. */
  load(): Traffic {
    const ids: string[] = [];
    const statuses = new Map<number, number>();
    const unexpected: string[] = [];
    let running = true;
    const done = (async () => {
      while (running) {
        const res = await takeIds(this.instance.url, this.key, this.secret, 10).catch(() => undefined);
        const status = res?.status ?? 0;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 200) ids.push(...res!.body.ids);
        else if (status !== 503 || !/^\d+$/.test(res!.headers.get('retry-after') ?? ''))
          unexpected.push(`${status} ${JSON.stringify(res?.body)}`);
        if (status !== 200) await sleep(20);
      }
    })();
    return {
      ids,
      statuses,
      stop: async () => {
        running = false;
        await done;
        this.issued.push(...ids);
        expect(unexpected).toEqual([]);
      },
    };
  }

  /** No id handed out twice, the process alive, no unhandled rejection. */
  expectUnharmed(): void {
    expect(new Set(this.issued).size).toBe(this.issued.length);
    expect(this.instance.proc.exitCode, this.instance.output().slice(-3000)).toBeNull();
    expect(this.instance.output()).not.toMatch(/unhandled_rejection/);
  }

  /** No request answered 500: every failure was a dependency's, answered 503 (invariant 7). */
  expectNo500(): void {
    expect(this.instance.output()).not.toMatch(/"msg":"internal error"/);
  }
}

/** Registers an entity ({@link SMALL_POOL} unless `entity` says otherwise) on `instance` and watches it. */
export async function watchEntity(instance: Instance, entity: Record<string, unknown> = {}): Promise<WatchedEntity> {
  const key = uniqueKey('orders');
  const secret = await register(instance.url, { key, ...SMALL_POOL, ...entity });
  return new WatchedEntity(instance, key, secret);
}
