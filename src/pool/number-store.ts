/**
 * Business numbers in Redis (docs/numbers.md): per entity two lists of
 * formatted numbers, one per slot, each holding one period, and a period
 * table the Lua functions read the Redis clock against
 * (`commands/number_*.lua`). The only TypeScript that calls them.
 */
import type { Period } from '../numbers/period';
import { callFunction, scriptOutcome } from '../redis/functions';
import { type NumberKeys, numberKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import { type TakenIds, listedIds } from './taken-ids';

export type NumberTakeResult =
  | { readonly kind: 'ok'; readonly numbers: TakenIds; readonly remaining: number; readonly period: string }
  /** Fewer than `count` ready in now's period (0: no slot holds it yet); nothing taken. */
  | { readonly kind: 'short'; readonly size: number }
  | { readonly kind: 'epoch_changed' }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number }
  /** The period's counter is full: nothing more until the next period. */
  | { readonly kind: 'period_full'; readonly msToPeriodEnd: number }
  /** Now's period is older than one already taken from (the deciding clock went back). */
  | { readonly kind: 'period_stale' };

/** One slot as the refiller sees it. */
export interface NumberSlot {
  readonly period: string | undefined;
  readonly start: number;
  readonly end: number;
  readonly full: boolean;
  readonly size: number;
}

/** An entity's slots at one instant of the Redis clock. */
export interface NumberState {
  readonly now: number;
  /** False when the lists were filled in another Redis epoch (reset before use). */
  readonly epochCurrent: boolean;
  readonly slots: readonly [NumberSlot, NumberSlot];
}

export type NumberPushResult = 'ok' | 'fenced' | 'epoch_changed' | 'slot_busy';

/** Numbers per push call: well under Lua's limit on unpacked arguments (~8,000). */
export const NUMBERS_PER_PUSH = 5000;

export class RedisNumberStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(entityKey: string): NumberKeys {
    return numberKeys(entityKey, this.prefix);
  }

  async take(entityKey: string, count: number, maxPerSecond: number): Promise<NumberTakeResult> {
    const k = this.keys(entityKey);
    const reply = await callFunction<[number, number?, string?, string?]>(
      this.redis,
      'idpool_number_take',
      [k.periods, k.epoch, k.lists[0], k.lists[1], k.ratePrefix],
      [count, maxPerSecond],
    );
    const [code, value, joined, period] = reply;
    const outcome = scriptOutcome('idpool_number_take', code, value, [
      'short',
      'epoch_changed',
      'rate_limited',
      'period_full',
      'period_stale',
    ]);
    if (outcome.kind === 'ok')
      return {
        kind: 'ok',
        numbers: listedIds((joined ?? '').split(',')),
        remaining: outcome.value,
        period: period ?? '',
      };
    return outcome;
  }

  async state(entityKey: string): Promise<NumberState> {
    const k = this.keys(entityKey);
    const r = await callFunction<(string | number | null)[]>(
      this.redis,
      'idpool_number_state',
      [k.periods, k.epoch, k.lists[0], k.lists[1]],
      [],
    );
    const slot = (at: number): NumberSlot => ({
      period: typeof r[at] === 'string' ? r[at] : undefined,
      start: Number(r[at + 1] ?? 0),
      end: Number(r[at + 2] ?? 0),
      full: r[at + 3] === '1',
      size: Number(r[at + 4] ?? 0),
    });
    return { now: Number(r[0]), epochCurrent: Number(r[1]) === 1, slots: [slot(2), slot(7)] };
  }

  /** Appends `numbers` (sequences `lowest..highest` of `period`, formatted) to `slot`; `full` marks the period's counter full. */
  async push(
    entityKey: string,
    slot: 0 | 1,
    period: Period,
    numbers: readonly string[],
    lowest: bigint | undefined,
    highest: bigint | undefined,
    full: boolean,
  ): Promise<NumberPushResult> {
    const k = this.keys(entityKey);
    const [code] = await callFunction<[number, number]>(
      this.redis,
      'idpool_number_push',
      [k.periods, k.epoch, k.fence, k.lists[0], k.lists[1]],
      [
        slot,
        period.id,
        period.start,
        period.end,
        lowest?.toString() ?? '',
        highest?.toString() ?? '',
        full ? 1 : 0,
        ...numbers,
      ],
    );
    const outcome = scriptOutcome('idpool_number_push', code, 0, ['epoch_changed', 'fenced', 'slot_busy']);
    return outcome.kind;
  }

  /**
   * Drops the lists filled in another epoch (`'epoch'`), or the slot holding
   * one period; raises each given period's fence to its sequence. True when
   * something was dropped.
   */
  async reset(
    entityKey: string,
    /** `'epoch'`, or a period id. */
    what: string,
    fences: readonly (readonly [string, bigint])[],
  ): Promise<boolean> {
    const k = this.keys(entityKey);
    const dropped = await callFunction<number>(
      this.redis,
      'idpool_number_reset',
      [k.periods, k.epoch, k.fence, k.lists[0], k.lists[1]],
      [what, ...fences.flatMap(([id, seq]) => [id, seq.toString()])],
    );
    return dropped === 1;
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
    await this.redis.del(k.lists[0], k.lists[1], k.periods);
  }
}
