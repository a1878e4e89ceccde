/**
 * The chaos run's load and what it records: one sequential client per
 * entity (each monotonic one checks that its ids only grow), a direct
 * consumer popping one entity's pool with `FCALL idpool_pop`, every answer
 * and every id kept compactly for the checker.
 */
import { type WriteStream } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { ADMIN_TOKEN, register } from '../../test/support/http';
import { sleep } from '../../test/support/wait';
import { entityKeys } from '../../src/redis/keys';
import type { Node } from './system';
import type { NumberTake } from './numbers';
import type { Random } from './random';

/** A client gives up on a request after this: longer is a hang (a SQL statement is bounded at 3 s, a Redis command at 2 s). */
export const CLIENT_TIMEOUT_MS = 10_000;

export type Mode = 'monotonic' | 'trend' | 'snowflake';

/** Every id handed out for one entity, as 64-bit integers, with when (ms into the run). */
export class IdLog {
  private values = new BigInt64Array(1 << 12);
  private times = new Uint32Array(1 << 12);
  size = 0;

  add(id: bigint, at: number): void {
    if (this.size === this.values.length) {
      const values = new BigInt64Array(this.size * 2);
      values.set(this.values);
      this.values = values;
      const times = new Uint32Array(this.size * 2);
      times.set(this.times);
      this.times = times;
    }
    this.values[this.size] = id;
    this.times[this.size++] = at;
  }

  /** Every id present more than once, with the times it was handed out. */
  repeats(): { id: bigint; at: number[] }[] {
    const sorted = this.values.slice(0, this.size).sort();
    const twice = new Set<bigint>();
    for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) twice.add(sorted[i]);
    const out = new Map<bigint, number[]>();
    for (let i = 0; i < this.size; i++)
      if (twice.has(this.values[i])) out.set(this.values[i], [...(out.get(this.values[i]) ?? []), this.times[i]]);
    return [...out].map(([id, at]) => ({ id, at }));
  }
}

export interface EntitySpec {
  readonly key: string;
  readonly mode: Mode;
  /** Pause between two requests of its client. */
  readonly pauseMs: number;
  readonly maxBatch: number;
  readonly registration: Record<string, unknown>;
  /** A business-number entity (numbers.ts): its answers are kept as takes, not as integer ids. */
  readonly numbers?: boolean;
  /**
   * A gapless series (gapless.ts): each take sends an Idempotency-Key, kept
   * across its retries until an answer that is not a 5xx or none, and a
   * `503 gapless_ledger_behind` (a restore) is reconciled as an operator would.
   */
  readonly gapless?: boolean;
}

export interface LoadEntity extends EntitySpec {
  secret: string;
  readonly ids: IdLog;
  /** A business-number entity's takes, in its client's order. */
  readonly takes: NumberTake[];
}

/** One answer (or failure) a client saw. */
export interface Answer {
  readonly node: number;
  readonly entity: number;
  readonly start: number;
  readonly end: number;
  /** HTTP status; 0 when no answer came (refused, reset, timed out). */
  readonly status: number;
  readonly retryAfter: boolean;
  readonly timedOut: boolean;
  readonly detail?: string;
}

/** An id of a monotonic entity smaller than one its sequential client had before. */
export interface OrderBreak {
  readonly entity: string;
  readonly at: number;
  readonly previous: bigint;
  readonly got: bigint;
}

/** Twenty entities of all three modes, rates, steps and pool sizes drawn from the seed. */
export function entitySpecs(random: Random, runTag: string): EntitySpec[] {
  const modes: Mode[] = [
    ...Array<Mode>(8).fill('monotonic'),
    ...Array<Mode>(6).fill('trend'),
    ...Array<Mode>(6).fill('snowflake'),
  ];
  return modes.map((mode, i) => {
    const maxBatch = random.pick([10, 100, 1000, 1000]);
    // Two entities have a rate limit their load passes now and then (429s).
    const limited = i === 3 || i === 17;
    const registration: Record<string, unknown> = {
      mode,
      maxSizePerTimes: 1000,
      maxSizePerSecond: limited ? 1000 : 0,
    };
    if (mode !== 'snowflake') {
      const step = random.pick([100, 500, 1000, 5000]);
      registration.step = step;
      // Small pools refill often (more refills under the faults); at least what the rules ask.
      registration.maxPoolSize = Math.max(1000, step * 5) * random.pick([1, 2, 4]);
    }
    return { key: `chaos-${runTag}-${i}-${mode}`, mode, pauseMs: random.int(150, 1500), maxBatch, registration };
  });
}

/** A batch size between 1 and `max`, log-uniform (mostly small, now and then large). */
function batch(random: Random, max: number): number {
  return Math.min(max, Math.max(1, Math.floor(Math.exp(random.next() * Math.log(max + 1)))));
}

export class Load {
  readonly answers: Answer[] = [];
  readonly orderBreaks: OrderBreak[] = [];
  directPops = 0;
  directErrors = 0;
  private running = true;
  private loops: Promise<void>[] = [];

  constructor(
    readonly entities: LoadEntity[],
    private readonly nodes: readonly Node[],
    private readonly random: Random,
    private readonly t0: number,
    private readonly idsOut: WriteStream | undefined,
  ) {}

  static async register(specs: EntitySpec[], nodes: readonly Node[]): Promise<LoadEntity[]> {
    const out: LoadEntity[] = [];
    for (const spec of specs) {
      const secret = await register(nodes[0].url, { key: spec.key, ...spec.registration });
      out.push({ ...spec, secret, ids: new IdLog(), takes: [] });
    }
    return out;
  }

  /** Starts every client and the direct consumer (of entity 0's pool, a monotonic one). */
  start(direct: Redis | Cluster): void {
    this.loops = this.entities.map((_, i) => this.client(i));
    this.loops.push(this.consumer(direct, 0));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private record(entity: LoadEntity, ids: readonly string[], at: number): void {
    for (const id of ids) entity.ids.add(BigInt(id), at);
    if (this.idsOut && ids.length) this.idsOut.write(ids.map((id) => `${entity.key},${id}\n`).join(''));
  }

  private async client(index: number): Promise<void> {
    const entity = this.entities[index];
    let last = -1n;
    let pending: { key: string; count: number } | undefined;
    let taken = 0;
    while (this.running) {
      const node = this.nodes[this.random.int(0, this.nodes.length - 1)];
      // A gapless take is sent again with its key and count until it is answered.
      pending ??= entity.gapless
        ? { key: `${entity.key}-${taken++}`, count: batch(this.random, entity.maxBatch) }
        : undefined;
      const count = pending?.count ?? batch(this.random, entity.maxBatch);
      const start = Date.now();
      let answer: Answer;
      try {
        const res = await fetch(`${node.url}/apps/${entity.key}/ids`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${entity.secret}`,
            'content-type': 'application/json',
            ...(pending && { 'idempotency-key': pending.key }),
          },
          body: JSON.stringify({ count }),
          signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
        });
        const text = await res.text();
        if (res.status < 500) pending = undefined;
        if (entity.gapless && text.includes('"gapless_ledger_behind"')) await reconcile(node.url, entity.key);
        const end = Date.now();
        answer = {
          node: node.index,
          entity: index,
          start,
          end,
          status: res.status,
          retryAfter: res.headers.has('retry-after'),
          timedOut: false,
          detail: res.status === 200 ? undefined : text.slice(0, 300),
        };
        if (res.status === 200 && entity.numbers) {
          const numbers = (JSON.parse(text) as { ids: string[] }).ids;
          entity.takes.push({ start, end, numbers });
          if (this.idsOut) this.idsOut.write(numbers.map((n) => `${entity.key},${n}\n`).join(''));
        } else if (res.status === 200) {
          const ids = (JSON.parse(text) as { ids: string[] }).ids;
          this.record(entity, ids, end - this.t0);
          if (entity.mode === 'monotonic') {
            for (const raw of ids) {
              const id = BigInt(raw);
              if (id <= last) this.orderBreaks.push({ entity: entity.key, at: end - this.t0, previous: last, got: id });
              last = id;
            }
          }
        }
      } catch (err) {
        const e = err as Error;
        answer = {
          node: node.index,
          entity: index,
          start,
          end: Date.now(),
          status: 0,
          retryAfter: false,
          timedOut: e.name === 'TimeoutError',
          detail: (e.cause as Error | undefined)?.message ?? e.message,
        };
      }
      this.answers.push(answer);
      await sleep(entity.pauseMs);
    }
  }

  /** Pops 1–100 ids of one entity's pool straight from Redis, as a trusted consumer does. */
  private async consumer(redis: Redis | Cluster, index: number): Promise<void> {
    const entity = this.entities[index];
    const keys = entityKeys(entity.key);
    while (this.running) {
      try {
        const ids = (await redis.call(
          'FCALL',
          'idpool_pop',
          2,
          keys.ids,
          keys.epoch,
          this.random.int(1, 100),
        )) as string[];
        this.directPops += ids.length;
        this.record(entity, ids, Date.now() - this.t0);
      } catch {
        // IDPOOL_SERVER_CHANGED while a pool is rebuilt, or Redis away: the consumer retries.
        this.directErrors++;
      }
      await sleep(200);
    }
  }
}

/** What an operator does on `gapless_ledger_behind` (docs/numbers.md "After a restore"): the reconcile, failures left for the next 503. */
async function reconcile(url: string, key: string): Promise<void> {
  await fetch(`${url}/admin/apps/${key}/numbers/reconcile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: '{}',
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  }).catch(() => undefined);
}
