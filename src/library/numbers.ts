/**
 * The library's business numbers: the numbers layer over an in-process pool, with no refiller or timer. A short
 * take fills now's period a step at a time; the first within the lead of a boundary stages the next period's step.
 */
import { errorMessage } from '../errors';
import { MemoryNumberStore } from '../pool/memory-number-store';
import { MemoryPoolStore, MemoryRefillLock } from '../pool/memory-pool-store';
import { type NumberEntity, NumberPeriods, type NumberPeriodsOptions } from '../pool/period-pools';

export class LocalNumbers {
  private readonly store: MemoryPoolStore;
  private readonly periods: NumberPeriods;
  /** The period each entity's next step was last filled ahead for. */
  private readonly prefilled = new Map<string, string>();
  /** One take or fill per entity at a time: a take that fills must not interleave with another's. */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly options: Pick<NumberPeriodsOptions, 'counter' | 'clock' | 'log'>) {
    this.store = new MemoryPoolStore(options.clock);
    this.periods = new NumberPeriods({
      ...options,
      store: new MemoryNumberStore(this.store, options.counter, options.clock),
      lock: new MemoryRefillLock(),
      events: { periodExhausted: () => undefined },
      retryMs: 1000,
    });
  }

  /** Prunes old periods' rows and marks now, as fills do hourly after. */
  start(): void {
    void this.periods.pruneCounters();
  }

  /** `count` numbers of the period now is in, all or nothing. */
  take(entity: NumberEntity, count: number): Promise<string[]> {
    return this.serial(entity.key, () => this.takeNow(entity, count));
  }

  private async takeNow(entity: NumberEntity, count: number): Promise<string[]> {
    // Now's period's ready numbers at most one step, or what a take needs (`wanted`).
    const sizing = { target: entity.step, lowWatermark: 0, max: this.periods.cap(entity) };
    for (;;) {
      const taken = await this.store.take(entity.key, count, 0);
      if (taken.kind === 'ok') {
        this.prefill(entity);
        return taken.ids.toArray();
      }
      // A period just begun made live, or the period's refusal (spent); else fill now's period.
      if (!(await this.periods.afterShort(entity, count))) await this.periods.fill(entity, count, sizing);
    }
  }

  /** Within the lead before a boundary (by the wall clock), the next period's first step, once, after this take. */
  private prefill(entity: NumberEntity): void {
    const { ahead } = this.periods.periodsAt(this.periods.scheme(entity), this.options.clock.now());
    if (!ahead || this.prefilled.get(entity.key) === ahead.id) return;
    this.prefilled.set(entity.key, ahead.id);
    // Nothing more of now's period (`max` 0): only the next period's step.
    const staged = () => this.periods.fill(entity, 0, { target: 0, lowWatermark: 0, max: 0 });
    this.serial(entity.key, staged).catch((err: unknown) =>
      this.options.log.warn({ entity: entity.key, err: errorMessage(err) }, 'reserving the next period ahead failed'),
    );
  }

  private serial<T>(entityKey: string, run: () => Promise<T>): Promise<T> {
    const mine = (this.running.get(entityKey) ?? Promise.resolve()).catch(() => undefined).then(run);
    this.running.set(entityKey, mine);
    void mine
      .finally(() => {
        if (this.running.get(entityKey) === mine) this.running.delete(entityKey);
      })
      .catch(() => undefined);
    return mine;
  }
}
