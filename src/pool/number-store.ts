/**
 * Business numbers in Redis (docs/numbers.md): the only TypeScript calling
 * `commands/number_*.lua`. Now's period's numbers wait formatted in the
 * entity's `ids` list, so a take and `FCALL idpool_pop` are a plain pool's.
 */
import type { Period } from '../numbers/period';
import { callFunction, queueFunction, scriptOutcome, withLibrary } from '../redis/functions';
import { type NumberKeys, numberKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import { transaction } from '../redis/transaction';
import type { LivePeriod } from './period-pools';
import { type NumberRun, RpushIds, RpushNumbers, queueRpush } from './redis-rpush-ids';

/** One list as the refiller sees it: slot 0 the live list (`ids`), 1 the staged one. */
export interface NumberSlot extends Omit<LivePeriod, 'period'> {
  readonly period: string | undefined;
  readonly start: number;
}

/** An entity's lists at one instant of the Redis clock. */
export interface NumberState {
  readonly now: number;
  /** False when the lists were filled in another Redis epoch (reset before use). */
  readonly epochCurrent: boolean;
  /** [live, staged]; the staged period was made live first if the clock is in it. */
  readonly slots: readonly [NumberSlot, NumberSlot];
  /** Start of the newest period that went live: no older period is served again. */
  readonly latest: number;
  /** A reset dropped lists filled in another epoch. */
  readonly dropped: boolean;
  /** Each period's fence (the highest sequence pushed), read with the lists: apart, a push between made use (fence − list) too high. */
  readonly fences: ReadonlyMap<string, bigint>;
}

type NumberPushResult = 'ok' | 'fenced' | 'epoch_changed' | 'period_stale' | 'period_over';

/** What `idpool_number_state` answers (number_state-6.lua): the clock, the epoch check, two slots of five, the latest start, a reset's drop, the fences. */
type StateReply = (string | number | null | string[])[];

function stateOf(r: StateReply): NumberState {
  const fences = new Map<string, bigint>();
  const pairs = (r[14] ?? []) as string[];
  for (let i = 0; i + 1 < pairs.length; i += 2) fences.set(pairs[i], BigInt(pairs[i + 1]));
  const slot = (at: number): NumberSlot => ({
    period: typeof r[at] === 'string' ? r[at] : undefined,
    start: Number(r[at + 1] ?? 0),
    end: Number(r[at + 2] ?? 0),
    full: r[at + 3] === '1',
    size: Number(r[at + 4] ?? 0),
  });
  return {
    now: Number(r[0]),
    epochCurrent: Number(r[1]) === 1,
    slots: [slot(2), slot(7)],
    latest: Number(r[12] ?? 0),
    dropped: r[13] === 1,
    fences,
  };
}

export class RedisNumberStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(entityKey: string): NumberKeys {
    return numberKeys(entityKey, this.prefix);
  }

  /**
   * The lists and periods by the Redis clock, the staged made live if due.
   * `reset` (period id, the highest sequence maybe issued): lists of another
   * epoch dropped first, those fences raised.
   */
  async state(entityKey: string, reset?: readonly (readonly [string, bigint])[]): Promise<NumberState> {
    const args = reset ? ['reset', ...reset.flatMap(([id, seq]) => [id, seq.toString()])] : [];
    const k = this.keys(entityKey);
    const keys = [k.periods, k.epoch, k.ids, k.staged, k.pushed, k.fence];
    return stateOf(await callFunction<StateReply>(this.redis, 'idpool_number_state', keys, args));
  }

  /**
   * Appends `numbers` (sequences `lowest..highest` of `period`, formatted or
   * a {@link NumberRun}, in take order) to its list, live or staged by the
   * Redis clock; `full` marks its counter full. One MULTI
   * (number_push_open-8.lua), the numbers by a native RPUSH.
   */
  async push(
    entityKey: string,
    period: Period,
    numbers: readonly string[] | NumberRun,
    lowest: bigint | undefined,
    highest: bigint | undefined,
    full: boolean,
  ): Promise<NumberPushResult> {
    const k = this.keys(entityKey);
    const count = 'seqs' in numbers ? numbers.seqs.length : numbers.length;
    const send = async () => {
      const multi = queueFunction(
        this.redis.multi(),
        'idpool_number_push_open',
        [k.periods, k.epoch, k.fence, k.ids, k.staged, k.pushing, k.pushOpen, k.pushed],
        [period.id, period.start, period.end, lowest?.toString() ?? '', highest?.toString() ?? '', count, full ? 1 : 0],
      );
      if (count > 0)
        queueRpush(multi, 'seqs' in numbers ? new RpushNumbers(k.pushing, numbers) : new RpushIds(k.pushing, numbers));
      const replies = await transaction(
        'push',
        queueFunction(multi, 'idpool_push_close', [k.ids, k.pushing, k.pushOpen, k.staged], []),
      );
      const [code] = replies[0] as [number, number?];
      return scriptOutcome('idpool_number_push_open', code, 0, [
        'epoch_changed',
        'fenced',
        'period_stale',
        'period_over',
      ]).kind;
    };
    return withLibrary(this.redis, send);
  }

  /** The numbers waiting in the list that holds `periodId` now (live or staged), in take order; none when no list holds it. */
  async waiting(entityKey: string, periodId: string): Promise<string[]> {
    const k = this.keys(entityKey);
    const slot = (await this.state(entityKey)).slots.findIndex((s) => s.period === periodId);
    return slot < 0 ? [] : this.redis.lrange(slot === 0 ? k.ids : k.staged, 0, -1);
  }

  /** `PeriodLayer.raise`'s drop up to `upTo` (`seq`), its fence raised to `seq` (number_trim-5.lua); resolves to how many. */
  trim(entityKey: string, periodId: string, upTo: string, seq: bigint): Promise<number> {
    const k = this.keys(entityKey);
    const keys = [k.periods, k.fence, k.ids, k.staged, k.pushed];
    return callFunction<number>(this.redis, 'idpool_number_trim', keys, [periodId, upTo, seq.toString()]);
  }

  /** The highest sequence ever pushed for the period, if any. */
  async fence(entityKey: string, periodId: string): Promise<bigint | undefined> {
    const value = await this.redis.hget(this.keys(entityKey).fence, periodId);
    return value === null ? undefined : BigInt(value);
  }

  /** Forgets the fences of periods named below `beforeId` (they sort as the periods do), after the counters' retention. */
  async pruneFences(entityKey: string, beforeId: string): Promise<void> {
    const key = this.keys(entityKey).fence;
    const old = (await this.redis.hkeys(key)).filter((id) => id.length === beforeId.length && id < beforeId);
    if (old.length > 0) await this.redis.hdel(key, ...old);
  }

  /** Drops a retired entity's lists (its fences stay). */
  async discard(entityKey: string): Promise<void> {
    const k = this.keys(entityKey);
    await this.redis.del(k.ids, k.staged, k.periods, k.pushed);
  }
}
