import type { EntityConfig, EntitySecret, Tunables } from './entity';
import type { EntityStore } from './entity-store';

/** Entity configuration in memory, with the SQL store's rules: keys never reused, retired rows kept. */
export class FakeEntityStore implements EntityStore {
  private readonly rows = new Map<string, { entity: EntityConfig; deletedAt: number }>();
  /** Calls made, by method name (tests count database round trips). */
  readonly calls: Record<string, number> = {};

  private count(method: string): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
  }

  async findLive(key: string): Promise<EntityConfig | undefined> {
    this.count('findLive');
    const row = this.rows.get(key);
    return row?.deletedAt === 0 ? row.entity : undefined;
  }

  async exists(key: string): Promise<boolean> {
    this.count('exists');
    return this.rows.has(key);
  }

  async listLive(): Promise<EntityConfig[]> {
    this.count('listLive');
    return [...this.rows.values()]
      .filter((r) => r.deletedAt === 0)
      .map((r) => r.entity)
      .sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  async changedSince(sinceMs: number): Promise<{ entity: EntityConfig; retired: boolean }[]> {
    this.count('changedSince');
    return [...this.rows.values()]
      .filter((r) => r.entity.updateTime >= sinceMs)
      .map((r) => ({ entity: r.entity, retired: r.deletedAt !== 0 }));
  }

  async insert(entity: EntityConfig): Promise<boolean> {
    this.count('insert');
    if (this.rows.has(entity.key)) return false;
    this.rows.set(entity.key, { entity, deletedAt: 0 });
    return true;
  }

  async update(key: string, t: Tunables, updateTime: number, was?: number): Promise<boolean> {
    return this.change('update', key, (entity) => ({ ...entity, ...t, updateTime }), 0, was);
  }

  async setSecrets(key: string, secrets: readonly EntitySecret[], updateTime: number, was?: number): Promise<boolean> {
    return this.change('setSecrets', key, (entity) => ({ ...entity, secrets: [...secrets], updateTime }), 0, was);
  }

  async setHeld(key: string, held: string | null, updateTime: number): Promise<boolean> {
    return this.change('setHeld', key, (entity) => ({ ...entity, held, updateTime }));
  }

  async retire(key: string, at: number): Promise<boolean> {
    return this.change('retire', key, (entity) => ({ ...entity, updateTime: at }), at);
  }

  /** Counts `method`; `next(entity)` replaces the live row of `key` (as of `was`), retired at `deletedAt` unless 0. */
  private change(
    method: string,
    key: string,
    next: (entity: EntityConfig) => EntityConfig,
    deletedAt = 0,
    was?: number,
  ): boolean {
    this.count(method);
    const row = this.rows.get(key);
    if (row?.deletedAt !== 0 || (was !== undefined && row.entity.updateTime !== was)) return false;
    this.rows.set(key, { entity: next(row.entity), deletedAt });
    return true;
  }
}
