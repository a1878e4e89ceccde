import type { Clock } from '../clock';
import { ConflictError, NotFoundError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import { every } from '../schedule';
import { type EntityConfig, type EntitySecret, KEY_PATTERN, type RegisterInput, type UpdateInput } from './entity';
import { hashSecret, newSecret, secretAccepted, secretRecord, unexpired } from './secrets';
import { EntityCache, type EntityChangeListener } from './entity-cache';
import type { EntityStore } from './entity-store';
import { GenerationSync, LocalRegistrationGeneration, type RegistrationGeneration } from './generation-sync';
import { patchedEntity, refuseTooManySecrets, registrationValues, withoutSecret } from './validation';
import { IdStride } from '../segment/stride';

const notFound = (key: string) => new NotFoundError(`no entity with key "${key}"`);

/** What the pool side needs to know about entities (narrow on purpose). */
export interface EntityCatalog {
  /** Cached config of a live entity; no I/O. */
  get(key: string): EntityConfig | undefined;
  /** Keys of every live entity whose ids come from segment pools (business numbers have their own, `numberKeys`). */
  segmentKeys(): string[];
}

/** Tries of a change that finds its entity's row changed since it was read (`EntityRegistry.rewrite`). */
const REWRITE_TRIES = 5;

/**
 * The register / update / retire and secret flows over the in-process {@link EntityCache}: a change made here is
 * cached at once and announced; others' arrive by {@link GenerationSync}. Input rules are in `validation.ts`.
 */
export class EntityRegistry implements EntityCatalog {
  private readonly listeners: EntityChangeListener[] = [];
  private readonly changes: Required<EntityChangeListener> = {
    onRegistered: async (entity) => {
      for (const l of this.listeners) await l.onRegistered?.(entity);
    },
    onRetired: async (key) => {
      for (const l of this.listeners) await l.onRetired?.(key);
    },
  };
  private readonly cache: EntityCache;
  private readonly sync: GenerationSync;

  constructor(
    private readonly store: Omit<EntityStore, 'findLive' | 'exists'>,
    private readonly clock: Clock,
    generation: RegistrationGeneration = new LocalRegistrationGeneration(),
    /** The default `interval` of a new entity. */
    private readonly refillTickMs = 100,
    /** Turns a registration's `firstId` into its start offset. */
    private readonly stride = new IdStride(),
  ) {
    this.cache = new EntityCache(store, clock, this.changes);
    this.sync = new GenerationSync(this.cache, generation, clock);
  }

  /** Tells `listener` of every registration and retirement seen from now on. */
  subscribe(listener: EntityChangeListener): void {
    this.listeners.push(listener);
  }

  // The cache's reads and the sync's schedule, as the registry's own.
  readonly load = () => this.sync.load();
  /** Picks up changes made through other instances. */
  readonly refresh = () => this.sync.refresh();
  readonly refreshIfStale = (maxAgeMs: number) => this.sync.refreshIfStale(maxAgeMs);
  readonly tick = () => this.sync.tick();
  readonly nextTickMs = () => this.sync.nextTickMs();
  readonly get = (key: string) => this.cache.get(key);
  readonly list = () => this.cache.list();
  readonly page = (after: string | undefined, limit: number) => this.cache.page(after, limit);
  readonly segmentKeys = () => this.cache.segmentKeys();
  /** Keys of every live entity that issues business numbers. */
  readonly numberKeys = () => this.cache.numberKeys();

  /** Cached config of a live entity; a miss costs SQL only after a registration ({@link GenerationSync.lookup}). */
  find(key: string): Promise<EntityConfig | undefined> {
    return this.sync.lookup(() => this.cache.get(key));
  }

  /** The live entity Leaf's or Tinyid's `tag` names: by key, or by alias for a tag that does not fit a key. */
  findByTag(tag: string): Promise<EntityConfig | undefined> {
    if (KEY_PATTERN.test(tag)) return this.find(tag);
    return this.sync.lookup(() => this.cache.byAlias(tag));
  }

  async require(key: string): Promise<EntityConfig> {
    const entity = await this.find(key);
    if (!entity) throw notFound(key);
    return entity;
  }

  async register(input: RegisterInput): Promise<{ entity: EntityConfig; secret: string }> {
    const values = registrationValues(input, this.refillTickMs, this.stride);
    const secret = input.secret ?? newSecret();
    const now = this.clock.now();
    const entity: EntityConfig = { ...values, secrets: [secretRecord(secret, now)], createTime: now, updateTime: now };
    if (entity.alias && this.cache.byAlias(entity.alias))
      throw new ConflictError(`incumbent tag "${entity.alias}" is already the alias of another entity`);
    if (!(await this.store.insert(entity)))
      throw new ConflictError(
        entity.alias
          ? `key "${entity.key}" or alias "${entity.alias}" is already registered (retired keys and aliases are never reused)`
          : `key "${entity.key}" is already registered (retired keys are never reused)`,
      );
    await this.commit(entity);
    await this.changes.onRegistered(entity);
    return { entity, secret };
  }

  async update(key: string, patch: UpdateInput): Promise<EntityConfig> {
    return this.rewrite(
      key,
      (current, updateTime) => patchedEntity(current, patch, updateTime),
      (next, was) => this.store.update(key, next, next.updateTime, was),
    );
  }

  /**
   * The entity `key` (or alias) when `secret` is one of its unexpired secrets: the same answer, after the same work,
   * for an unknown key and a wrong secret. The one check behind every credential.
   */
  async authenticate(key: string, secret: string): Promise<EntityConfig | undefined> {
    const found = await this.findByTag(key);
    return secretAccepted(found, secret, this.clock.now()) ? found : undefined;
  }

  /** A new secret; the old ones stay for `keepOldForSeconds` (or their own expiry), else stop at once (a leak). */
  async rotateSecret(key: string, keepOldForSeconds = 0): Promise<string> {
    const secret = newSecret();
    await this.changeSecrets(key, (live, now) => {
      const until = now + keepOldForSeconds * 1000;
      const kept =
        keepOldForSeconds > 0
          ? live.map((s) => ({ ...s, expiresAt: s.expiresAt === null ? until : Math.min(s.expiresAt, until) }))
          : [];
      return [secretRecord(secret, now), ...kept];
    });
    return secret;
  }

  /** One more secret (given or new), until `expiresInSeconds`; a known one is not added twice (imports rerun). */
  async addSecret(key: string, o: { secret?: string; expiresInSeconds?: number } = {}) {
    const secret = o.secret ?? newSecret();
    const hash = hashSecret(secret);
    let result: { id: string; added: boolean; expiresAt: number | null } | undefined;
    await this.changeSecrets(key, (live, now) => {
      const known = live.find((s) => s.hash === hash);
      const record = known ?? secretRecord(secret, now, o.expiresInSeconds ? now + o.expiresInSeconds * 1000 : null);
      result = { id: record.id, added: !known, expiresAt: record.expiresAt };
      return known ? undefined : [record, ...live];
    });
    if (!result) throw notFound(key);
    return { ...result, secret };
  }

  async removeSecret(key: string, id: string): Promise<void> {
    await this.changeSecrets(key, (live) => withoutSecret(key, live, id));
  }

  /** Writes `next(unexpired secrets, now)` (undefined: no change); announced, so a removed one stops everywhere now. */
  private async changeSecrets(
    key: string,
    next: (live: EntitySecret[], now: number) => EntitySecret[] | undefined,
  ): Promise<void> {
    await this.rewrite(
      key,
      (current, updateTime) => {
        const now = this.clock.now();
        const secrets = next(unexpired(current.secrets, now), now);
        if (secrets) refuseTooManySecrets(key, secrets);
        return secrets && { ...current, secrets, updateTime };
      },
      (written, was) => this.store.setSecrets(key, written.secrets, written.updateTime, was),
    );
  }

  /**
   * `make(entity as read)` (undefined: no change), written only where its row is still as read, so two instances
   * changing one entity at once both count: the one that finds the row changed refreshes and makes its change anew.
   */
  private async rewrite(
    key: string,
    make: (current: EntityConfig, updateTime: number) => EntityConfig | undefined,
    write: (next: EntityConfig, was: number) => Promise<boolean>,
  ): Promise<EntityConfig> {
    let current = await this.require(key);
    for (let tries = 1; ; tries++) {
      const next = make(current, Math.max(this.clock.now(), current.updateTime + 1));
      if (!next) return current;
      if (await write(next, current.updateTime)) return this.commit(next);
      if (tries === REWRITE_TRIES)
        throw new UnavailableError(`entity ${key} is being changed by others at the same moment; retry shortly`, 1);
      // Changed elsewhere (or retired): the cache catches up with the row, and the change is made from it.
      await this.sync.refresh();
      current = await this.require(key);
    }
  }

  /** `next`, written, cached and announced to every instance. */
  private async commit(next: EntityConfig): Promise<EntityConfig> {
    this.cache.written(next);
    await this.sync.announce();
    return next;
  }

  /** The first number of `entity`'s line whose id is at least `id` (this deployment's stride and the entity's spacing). */
  firstNumberFrom(entity: EntityConfig, id: bigint): bigint {
    return this.stride.of(entity).firstNumberFrom(id);
  }

  /**
   * Holds an entity (`held`: why, as its 503 says it) or serves it again (null), at once on every instance. A releaser
   * has checked its line starts above the incumbent's ids; a holder of a pooled entity discards its pool.
   */
  async setHeld(key: string, held: string | null): Promise<EntityConfig> {
    const current = await this.require(key);
    if ((current.held ?? null) === held) return current;
    const updateTime = Math.max(this.clock.now(), current.updateTime + 1);
    if (!(await this.store.setHeld(key, held, updateTime))) throw notFound(key);
    return this.commit({ ...current, held, updateTime });
  }

  async retire(key: string): Promise<void> {
    await this.require(key);
    if (!(await this.store.retire(key, this.clock.now()))) throw notFound(key);
    this.cache.forget(key);
    await this.sync.announce();
    await this.changes.onRetired(key);
  }
}

/** The registry, loaded now; once started, others' changes arrive within 100 ms on Redis, a second without. */
export async function buildRegistry(deps: {
  config: { refillIntervalMs: number };
  stores: { entities: EntityStore; registrations: RegistrationGeneration; stride: IdStride };
  clock: Clock;
  log: Logger;
}) {
  const { entities, registrations, stride } = deps.stores;
  const registry = new EntityRegistry(entities, deps.clock, registrations, deps.config.refillIntervalMs, stride);
  await registry.load();
  const refresh = every(
    () => registry.nextTickMs(),
    () =>
      registry
        .tick()
        .catch((err: unknown) => deps.log.warn({ err: errorMessage(err) }, 'could not refresh entity configuration')),
    deps.clock,
  );
  return { value: { registry, start: () => refresh.start() }, close: () => refresh.stop() };
}
