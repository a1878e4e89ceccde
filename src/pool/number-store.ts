/**
 * Business numbers in Redis, the only caller of `commands/number_*.lua`: now's period's numbers wait formatted in
 * the entity's `ids` list, so a take and `FCALL idpool_pop` are a plain pool's.
 */
import type { EntityConfig } from '../entities/entity';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import { callFunction, queueFunction, scriptOutcome, withLibrary } from '../redis/functions';
import { type NumberKeys, numberKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import { transaction } from '../redis/transaction';
import type { SeqRange } from '../segment/number-counter';
import { type PeriodSlot, type PeriodState, type PeriodStore, numberRun } from './period-pools';
import { type NumberRun, RpushIds, RpushNumbers, queueRpush } from './redis-rpush-ids';
import { pushInCalls } from './segment-push';

const PUSH_REFUSALS = ['epoch_changed', 'fenced', 'period_stale', 'period_over'] as const;
type NumberPushResult = 'ok' | (typeof PUSH_REFUSALS)[number];

/** What `idpool_number_state` answers (number_state-6.lua): the clock, the epoch check, two slots of five, the latest start, a reset's drop, the fences. */
type StateReply = (string | number | null | string[])[];

function stateOf(r: StateReply): PeriodState {
  const fences = new Map<string, bigint>();
  const pairs = (r[14] ?? []) as string[];
  for (let i = 0; i + 1 < pairs.length; i += 2) fences.set(pairs[i], BigInt(pairs[i + 1]));
  const slot = (at: number): PeriodSlot => ({
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

/** The Redis clock decides the period: the live list expires at its period's end and the next, staged, goes live by `TIME`. */
export class RedisNumberStore implements PeriodStore {
  readonly inProcess = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(entityKey: string): NumberKeys {
    return numberKeys(entityKey, this.prefix);
  }

  /** The lists and periods by the Redis clock, the staged made live if due (number_state-6.lua). */
  async state(entityKey: string, reset?: readonly (readonly [string, bigint])[]): Promise<PeriodState> {
    const args = reset ? ['reset', ...reset.flatMap(([id, seq]) => [id, seq.toString()])] : [];
    const k = this.keys(entityKey);
    const keys = [k.periods, k.epoch, k.ids, k.staged, k.pushed, k.fence];
    return stateOf(await callFunction<StateReply>(this.redis, 'idpool_number_state', keys, args));
  }

  /**
   * Appends `numbers` (`lowest..highest` of `period`, in take order) to its list, live or staged by the Redis clock;
   * `full` marks its counter full. One MULTI (number_push_open-8.lua), the numbers by a native RPUSH.
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
      return scriptOutcome('idpool_number_push_open', code, 0, PUSH_REFUSALS).kind;
    };
    return withLibrary(this.redis, send);
  }

  /** In calls as a segment's: a trend entity's calls hold whole steps, so each call's lowest and highest bound it (the fence). */
  async pushRange(
    entity: Pick<EntityConfig, 'key' | 'mode' | 'step'>,
    scheme: NumberScheme,
    period: Period,
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<NumberPushResult> {
    if (!range) return this.push(entity.key, period, [], undefined, undefined, full);
    return pushInCalls(entity, range.first, range.last, (first, last) => {
      const run = numberRun(scheme, entity, period, { first, last });
      return this.push(entity.key, period, run, first, last, full && last === range.last);
    });
  }

  /** None when no list holds the period now. */
  async waiting(entityKey: string, period: Period): Promise<string[]> {
    const k = this.keys(entityKey);
    const slot = (await this.state(entityKey)).slots.findIndex((s) => s.period === period.id);
    return slot < 0 ? [] : this.redis.lrange(slot === 0 ? k.ids : k.staged, 0, -1);
  }

  /** Its fence raised to `seq` too (number_trim-5.lua); resolves to how many were dropped. */
  trim(entityKey: string, period: Period, upTo: string, seq: bigint): Promise<number> {
    const k = this.keys(entityKey);
    const keys = [k.periods, k.fence, k.ids, k.staged, k.pushed];
    return callFunction<number>(this.redis, 'idpool_number_trim', keys, [period.id, upTo, seq.toString()]);
  }

  /** Handed out is at most what was pushed (the fence): a reservation never pushed was never taken. */
  async issued(entityKey: string, periodId: string): Promise<bigint> {
    const value = await this.redis.hget(this.keys(entityKey).fence, periodId);
    return value === null ? 0n : BigInt(value);
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
