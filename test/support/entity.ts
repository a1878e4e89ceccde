import { type EntityConfig, type RegisterInput, withDefaults } from '../../src/entities/entity';

/**
 * A complete {@link EntityConfig}: `orders` (or `overrides.key`, also its
 * name), monotonic, a small pool (step
 * 100, at most 1,000 ids, 500 per take, no per-second limit), refill checked
 * every 100 ms; the defaults of `withDefaults` for the rest. `overrides`
 * replace fields after the defaults are worked out (`maxPoolSize` is not
 * recomputed from an overridden `step`).
 */
export function entityConfig(overrides: Partial<EntityConfig> = {}): EntityConfig {
  const input: RegisterInput = {
    key: overrides.key ?? 'orders',
    mode: 'monotonic',
    step: 100,
    maxPoolSize: 1000,
    maxSizePerSecond: 0,
    maxSizePerTimes: 500,
  };
  return { ...withDefaults(input), secrets: [], createTime: 0, updateTime: 0, ...overrides };
}
