/**
 * An entity whose refill lock is held by an instance stalled mid-refill,
 * while two others take from it, and a fault of that holder: for the refill
 * lock's tests (test/integration/refill-lock.test.ts) and its benchmark
 * (bench/refill-lock.bench.ts). Real processes: the holder is
 * `fixtures/stalling-instance.ts`, the survivors `src/main.ts`.
 */
import { join } from 'node:path';
import type Redis from 'ioredis';
import { entityKeys } from '../../src/redis/keys';
import { sleep, waitFor } from './wait';
import { register, takeIds } from './http';
import { type Instance, startInstance } from './processes';

const STALLING_INSTANCE = join(__dirname, '..', 'integration', 'fixtures', 'stalling-instance.ts');

export interface StalledRefill {
  readonly holder: Instance;
  readonly survivors: Instance[];
  readonly secret: string;
  /** The segment the holder reserved and holds back (offsets), and its Redis connection's CLIENT ID. */
  readonly segment: { start: bigint; end: bigint };
  readonly clientId: number;
  stop(): Promise<void>;
}

/**
 * Starts the holder, registers `key` on it (its first refill stalls with the
 * lock held), and two survivors. Resolves once the holder is stalled and
 * the survivors listen. The survivors start after the stall, so they can
 * never take the lock first; `survivorsFirst` starts them before, so the
 * fault may come soon after the lock was taken (a lock that is not extended
 * has its whole TTL left then).
 */
export async function stalledRefill(
  env: Record<string, string>,
  key: string,
  { survivorsFirst = false } = {},
): Promise<StalledRefill> {
  const instances: Instance[] = [];
  const stop = async () => {
    await Promise.all(instances.map((i) => i.stop()));
  };
  try {
    const startSurvivors = async () => instances.push(...(await Promise.all([startInstance(env), startInstance(env)])));
    if (survivorsFirst) await startSurvivors();
    const holder = await startInstance(
      { ...env, STALL_ENTITY: key, STALL_MS: '120000' },
      30_000,
      undefined,
      STALLING_INSTANCE,
    );
    instances.unshift(holder);
    const secret = await register(holder.url, { key, step: 1000, maxSizePerTimes: 10, maxSizePerSecond: 0 });
    const line = await waitFor(() => /\{"msg":"stalling"[^\n]*\}/.exec(holder.output())?.[0], { timeoutMs: 10_000 });
    const stalling = JSON.parse(line) as { start: string; end: string; clientId: number };
    if (!survivorsFirst) await startSurvivors();
    return {
      holder,
      survivors: instances.slice(1),
      secret,
      segment: { start: BigInt(stalling.start), end: BigInt(stalling.end) },
      clientId: stalling.clientId,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface HolderFault {
  /** Ids served by the survivors while the holder held the lock, before the fault (none: the pool is empty). */
  readonly servedWhileHeld: number;
  /** The lock's value and PTTL just before the fault. */
  readonly lock: { value: string | null; pttl: number };
  /** Per survivor, ms from the fault to its first id (NaN: none within `limitMs`). */
  readonly toIds: number[];
  /** Every id the survivors handed out. */
  readonly ids: string[];
  /** Answers other than 200 and 503. */
  readonly unexpected: string[];
}

/**
 * Two clients per survivor take 10 ids at a time: `holdMs` with the lock
 * held, then `fault()`, then until every survivor has served again (or `limitMs`).
 */
export async function faultHolder(
  stalled: StalledRefill,
  key: string,
  direct: Redis,
  fault: () => Promise<void>,
  { holdMs = 2500, limitMs = 5000 } = {},
): Promise<HolderFault> {
  const ids: string[] = [];
  const unexpected: string[] = [];
  const okAt: number[][] = stalled.survivors.map(() => []);
  let running = true;
  const loops = stalled.survivors.flatMap((survivor, s) =>
    [0, 1].map(async () => {
      while (running) {
        const res = await takeIds(survivor.url, key, stalled.secret, 10).catch((err: Error) => err);
        if (res instanceof Error) unexpected.push(res.message);
        else if (res.status === 200) {
          ids.push(...res.body.ids);
          okAt[s].push(Date.now());
        } else if (res.status !== 503) unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
        else await sleep(20);
      }
    }),
  );
  try {
    await sleep(holdMs);
    const servedWhileHeld = ids.length;
    const lockKey = entityKeys(key).lock;
    const [value, pttl] = await Promise.all([direct.get(lockKey), direct.pttl(lockKey)]);
    const faultAt = Date.now();
    await fault();
    const firstAfter = () => okAt.map((times) => times.find((t) => t >= faultAt));
    await waitFor(() => firstAfter().every((t) => t !== undefined), { timeoutMs: limitMs }).catch(() => undefined);
    return {
      servedWhileHeld,
      lock: { value, pttl },
      toIds: firstAfter().map((t) => (t === undefined ? Number.NaN : t - faultAt)),
      ids,
      unexpected,
    };
  } finally {
    running = false;
    await Promise.all(loops);
  }
}
