import type { Clock } from '../clock';
import type { EntityConfig, EntitySecret } from './entity';
import type { EntityStore } from './entity-store';

export interface EntityChangeListener {
  onRetired?(key: string): void | Promise<void>;
  onRegistered?(entity: EntityConfig): void | Promise<void>;
}

/** The live entities in process, by key and in key order; when to pull is {@link GenerationSync}'s to decide. */
export class EntityCache {
  // Every pull looks back this far (ms), so rows written by an instance whose clock is a little behind are seen.
  private static readonly SKEW_MARGIN_MS = 5000;

  private readonly entities = new Map<string, EntityConfig>();
  /** Keys by alias (aliases never change). */
  private readonly aliases = new Map<string, string>();
  /** Rebuilt on the first page read after a change (far rarer than changes in a bulk import). */
  private sortedKeys: string[] | undefined;
  /** Rebuilt after a change: asked every refill tick, 100,000 entities cost 2.4 % of a core idle (bench/idle.bench.ts). */
  private byKind: { segment: string[]; numbers: string[] } | undefined;
  private pulledAt = 0;
  /** Writes through this process ({@link written}): how many so far, and the count at each key's last. */
  private writes = 0;
  private readonly writtenAt = new Map<string, number>();

  constructor(
    private readonly store: Pick<EntityStore, 'listLive' | 'changedSince'>,
    private readonly clock: Clock,
    private readonly changes: Required<EntityChangeListener>,
  ) {}

  async loadAll(): Promise<void> {
    const now = this.clock.now();
    const entities = await this.store.listLive();
    this.entities.clear();
    this.aliases.clear();
    for (const entity of entities) this.remember(entity);
    this.sortedKeys = this.byKind = undefined;
    this.pulledAt = now;
  }

  async pullChanges(): Promise<void> {
    const now = this.clock.now();
    const writesBefore = this.writes;
    const changed = await this.store.changedSince(this.pulledAt - EntityCache.SKEW_MARGIN_MS);
    this.pulledAt = now;
    for (const { entity, retired } of changed) {
      // Written here while the query ran: the row read may be from before, and the next pull reads it after.
      if ((this.writtenAt.get(entity.key) ?? 0) > writesBefore) continue;
      const known = this.entities.get(entity.key);
      if (retired) {
        if (known) {
          this.forget(entity.key);
          await this.changes.onRetired(entity.key);
        }
      } else if (known?.updateTime !== entity.updateTime || !sameSecrets(known.secrets, entity.secrets)) {
        this.remember(entity);
        if (!known) await this.changes.onRegistered(entity);
      }
    }
    for (const [key, at] of this.writtenAt) if (at <= writesBefore) this.writtenAt.delete(key);
  }

  get(key: string): EntityConfig | undefined {
    return this.entities.get(key);
  }

  byAlias(alias: string): EntityConfig | undefined {
    const key = this.aliases.get(alias);
    return key === undefined ? undefined : this.entities.get(key);
  }

  /** Caches an entity this process just wrote: a pull under way, whose row may be older, leaves it. */
  written(entity: EntityConfig): void {
    this.writtenAt.set(entity.key, ++this.writes);
    this.remember(entity);
  }

  remember(entity: EntityConfig): void {
    if (!this.entities.has(entity.key)) this.sortedKeys = undefined;
    // A changed entity may change kind (a format set): rebuild on the next ask.
    this.byKind = undefined;
    this.entities.set(entity.key, entity);
    if (entity.alias) this.aliases.set(entity.alias, entity.key);
  }

  forget(key: string): void {
    const alias = this.entities.get(key)?.alias;
    if (alias) this.aliases.delete(alias);
    if (this.entities.delete(key)) this.sortedKeys = this.byKind = undefined;
  }

  count(): number {
    return this.entities.size;
  }

  list(): EntityConfig[] {
    return this.keysInOrder().map((k) => this.cached(k));
  }

  /** Up to `limit` live entities in key order after the key `after` (which need not exist); `next`: null at the end. */
  page(after: string | undefined, limit: number): { entities: EntityConfig[]; next: string | null } {
    const keys = this.keysInOrder();
    let from = 0;
    if (after !== undefined) {
      // First key greater than `after` (binary search: keys are unique and ordered).
      let hi = keys.length;
      while (from < hi) {
        const mid = (from + hi) >>> 1;
        if (keys[mid] <= after) from = mid + 1;
        else hi = mid;
      }
    }
    const slice = keys.slice(from, from + limit);
    const more = from + limit < keys.length;
    return { entities: slice.map((k) => this.cached(k)), next: more ? slice[slice.length - 1] : null };
  }

  /** Keys of every live entity whose ids come from segments (a copy). */
  segmentKeys(): string[] {
    return [...this.kinds().segment];
  }

  /** Keys of every live entity with pooled business numbers (gapless ones are issued at the take; a copy). */
  numberKeys(): string[] {
    return [...this.kinds().numbers];
  }

  private kinds(): { segment: string[]; numbers: string[] } {
    if (this.byKind) return this.byKind;
    const segment: string[] = [];
    const numbers: string[] = [];
    for (const entity of this.entities.values()) {
      if (entity.gapless) continue;
      if (entity.numbers) numbers.push(entity.key);
      else if (entity.mode !== 'snowflake') segment.push(entity.key);
    }
    this.byKind = { segment, numbers };
    return this.byKind;
  }

  private keysInOrder(): string[] {
    // Plain `<` order: keys are ASCII, so this is also the byte order SQL uses.
    this.sortedKeys ??= [...this.entities.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sortedKeys;
  }

  private cached(key: string): EntityConfig {
    const entity = this.entities.get(key);
    if (!entity) throw new Error(`registry: ordered key "${key}" is not cached`);
    return entity;
  }
}

function sameSecrets(a: readonly EntitySecret[], b: readonly EntitySecret[]): boolean {
  return a.length === b.length && a.every((s, i) => s.hash === b[i].hash && s.expiresAt === b[i].expiresAt);
}
