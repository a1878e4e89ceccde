import type { MetricObjectWithValues, MetricValue } from 'prom-client';

/** A metric family with its values read, as a Registry renders it. */
export type Family = MetricObjectWithValues<MetricValue<string>>;

/** How a per-entity family is totalled in `idpool_all_…`: summed, the soonest, or none (offsets, watermarks). */
export type Total = 'sum' | 'min' | null;

/**
 * A gauge or counter with one value per entity in a Map: prom-client's copy every label set on each read, which
 * at 100,000 entities made a scrape take seconds. This is read only for the entities a scrape shows.
 */
export class EntitySeries {
  readonly values = new Map<string, number>();
  /** prom-client reads these two when the gauge sits in a Registry. */
  readonly labelNames = ['entity'];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly total: Total,
    readonly type: 'gauge' | 'counter' = 'gauge',
  ) {}

  set(labels: { entity: string }, value: number): void {
    this.values.set(labels.entity, value);
  }

  inc(labels: { entity: string }, by = 1): void {
    this.values.set(labels.entity, (this.values.get(labels.entity) ?? 0) + by);
  }

  remove(labels: { entity: string }): void {
    this.values.delete(labels.entity);
  }

  /** The family with the given entities' values (default: every entity), as a Registry renders it. */
  family(entities: Iterable<string> = this.values.keys()): Family {
    const values: MetricValue<string>[] = [];
    for (const entity of entities) {
      const value = this.values.get(entity);
      if (value !== undefined) values.push({ value, labels: { entity } });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' } as unknown as Family;
  }

  /** `idpool_all_…`: the sum, or the soonest, over every entity, one series without the `entity` label. */
  totalFamily(total: 'sum' | 'min'): Family {
    let value = total === 'sum' ? 0 : Number.POSITIVE_INFINITY;
    for (const v of this.values.values()) value = total === 'sum' ? value + v : Math.min(value, v);
    return {
      ...this.family([]),
      name: this.name.replace(/^idpool_/, 'idpool_all_'),
      help: `${this.help} (${total === 'sum' ? 'total' : 'the soonest'} over all entities)`,
      values: this.values.size ? [{ value, labels: {} }] : [],
    };
  }

  /** What a Registry calls. */
  async get(): Promise<Family> {
    return this.family();
  }
}

/** Seconds since each entity's last sample (set as its Unix ms), worked out when read: an unreached one ages. */
export class EntitySampleAge extends EntitySeries {
  constructor(private readonly nowMs: () => number) {
    super(
      'idpool_ops_sample_age_seconds',
      "Seconds since the ops sampler last read the entity's pool (stale when above 2 × idpool_ops_sample_round_seconds)",
      null,
    );
  }

  /** The oldest sample's age over every sampled entity, in seconds (0 with none). */
  maxAge(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const at of this.values.values()) oldest = Math.min(oldest, at);
    return Number.isFinite(oldest) ? Math.max(0, (this.nowMs() - oldest) / 1000) : 0;
  }

  override family(entities: Iterable<string> = this.values.keys()): Family {
    const family = super.family(entities);
    const now = this.nowMs();
    for (const v of family.values) v.value = Math.max(0, (now - v.value) / 1000);
    return family;
  }
}
