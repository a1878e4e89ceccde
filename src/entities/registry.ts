import type { Clock } from '../clock';
import { ConflictError, InvalidRequestError, NotFoundError } from '../errors';
import {
  type EntityConfig,
  type EntitySecret,
  type RegisterInput,
  type UpdateInput,
  checkRules,
  withDefaults,
} from './entity';
import { MAX_SECRETS, hashSecret, newSecret, secretAccepted, secretRecord, unexpired } from './secrets';
import type { EntityStore } from './entity-store';
import { IdStride } from '../segment/stride';

/** What the pool side needs to know about entities (narrow on purpose). */
export interface EntityCatalog {
  /** Cached config of a live entity; no I/O. */
  get(key: string): EntityConfig | undefined;
  /** Keys of every live entity whose ids come from segments. */
  segmentKeys(): string[];
}

/**
 * A counter every registration, change, secret rotation and retirement
 * bumps, readable by every instance (Redis in service mode). Instances read
 * it often while they serve (one GET; {@link EntityRegistry.tick}) and
 * refresh when it moved, so a rotated secret or a
 * retired key stops working everywhere at once, not at the next full
 * refresh. An instance whose cache was synced at generation g knows every
 * entity registered before g, so while the generation is still g a key
 * missing from its cache is unknown without asking the database; when it
 * moved, one refresh (shared by concurrent requests) catches up. Unknown keys
 * then cost no SQL however many are tried, and an entity registered on
 * another instance works here at once.
 */
export interface RegistrationGeneration {
  current(): Promise<number>;
  bump(): Promise<void>;
}

/** Registrations through this process only (no Redis): others' show up with the next refresh (≤ 1 s). */
export class LocalRegistrationGeneration implements RegistrationGeneration {
  private value = 0;
  async current(): Promise<number> {
    return this.value;
  }
  async bump(): Promise<void> {
    this.value++;
  }
}

export interface EntityChangeListener {
  onRetired?(key: string): void | Promise<void>;
  onRegistered?(entity: EntityConfig): void | Promise<void>;
}

/**
 * Registered entities: validation, secrets, and the in-process cache that
 * keeps SQL off the hot path. The cache is refreshed at once by changes made
 * through this instance and by {@link refresh} (every second) for changes
 * made through others.
 */
export class EntityRegistry implements EntityCatalog {
  private readonly cache = new Map<string, EntityConfig>();
  /** Keys of {@link cache} in order, rebuilt on the first page read after a change (pages are read far less often than entities change in a bulk import). */
  private sortedKeys: string[] | undefined;
  private lastRefresh = 0;
  /** When {@link refreshIfStale} last refreshed, and whether that succeeded. */
  private lastAttempt = 0;
  private lastAttemptOk = true;
  /** The registration generation the cache is known to include (undefined: not known). */
  private syncedGeneration: number | undefined;
  /** The refresh under way, shared by every request that needs one. */
  private syncing: Promise<void> | undefined;
  /** When a request last looked an entity up here (service clock ms). */
  private lastUsed = Number.NEGATIVE_INFINITY;
  /** When a read of the generation last started. */
  private lastGenerationRead = Number.NEGATIVE_INFINITY;
  /** Reads of the generation under way (the tick's, a catch-up's, a lookup's). */
  private readsInFlight = 0;
  /** The read of the generation a request after an idle spell started, and until when requests wait for it. */
  private catchingUp: Promise<number | undefined> | undefined;
  private catchUpUntil = Number.NEGATIVE_INFINITY;

  private readonly listeners: EntityChangeListener[] = [];

  constructor(
    private readonly store: Pick<
      EntityStore,
      'listLive' | 'changedSince' | 'insert' | 'update' | 'setSecrets' | 'retire'
    >,
    private readonly clock: Clock,
    /** Registrations counted across instances (Redis), so an unknown key costs no SQL until one happens. */
    private readonly generation: RegistrationGeneration = new LocalRegistrationGeneration(),
    /** The service's refill tick: the default `interval` of a new entity. */
    private readonly refillTickMs = 100,
    /** The deployment's stride: turns a registration's `firstId` into its start offset. */
    private readonly stride = new IdStride(),
  ) {}

  /** Tells `listener` of every registration and retirement seen from now on. */
  subscribe(listener: EntityChangeListener): void {
    this.listeners.push(listener);
  }

  private async registered(entity: EntityConfig): Promise<void> {
    for (const l of this.listeners) await l.onRegistered?.(entity);
  }

  private async retired(key: string): Promise<void> {
    for (const l of this.listeners) await l.onRetired?.(key);
  }

  /** The generation now, or undefined when it cannot be read (then the cache is not trusted to be complete). */
  private async readGeneration(): Promise<number | undefined> {
    this.lastGenerationRead = this.clock.now();
    this.readsInFlight++;
    try {
      return await this.generation.current();
    } catch {
      return undefined;
    } finally {
      this.readsInFlight--;
    }
  }

  async load(): Promise<void> {
    const now = this.clock.now();
    const generation = await this.readGeneration();
    const entities = await this.store.listLive();
    this.cache.clear();
    for (const entity of entities) this.cache.set(entity.key, entity);
    this.sortedKeys = undefined;
    this.lastRefresh = now;
    this.lastAttempt = now;
    this.syncedGeneration = generation;
  }

  // Rows updated by another instance whose clock runs a little behind ours
  // must still be seen: look back this far (ms) on every refresh.
  private static readonly SKEW_MARGIN_MS = 5000;

  /**
   * Refreshes when the generation moved since the last sync (another
   * instance changed an entity) or when the last refresh is `maxAgeMs` old;
   * otherwise costs one read of the generation.
   */
  async refreshIfStale(maxAgeMs: number): Promise<void> {
    const generation = await this.readGeneration();
    const moved = generation !== undefined && generation !== this.syncedGeneration;
    const now = this.clock.now();
    // After a failed refresh (database down) only every `maxAgeMs`, however often the generation moves.
    if (now - this.lastAttempt < maxAgeMs && !(moved && this.lastAttemptOk)) return;
    this.lastAttempt = now;
    this.lastAttemptOk = false;
    await this.refresh();
    this.lastAttemptOk = true;
  }

  /**
   * The service's 100 ms tick. While requests look entities up here it is
   * {@link refreshIfStale}; once none has for {@link IDLE_AFTER_MS} it only
   * refreshes every {@link FULL_REFRESH_MS}, and the next request reads the generation
   * first ({@link find}). An idle instance then reads it once a second, not
   * ten times (its idle CPU 1.43 → 1.13 % of a core, measured).
   */
  async tick(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastUsed > EntityRegistry.IDLE_AFTER_MS && now - this.lastAttempt < EntityRegistry.FULL_REFRESH_MS)
      return;
    await this.refreshIfStale(EntityRegistry.FULL_REFRESH_MS);
  }

  /** The tick refreshes fully at least this often (an idle instance reads the generation only then). */
  static readonly FULL_REFRESH_MS = 1000;

  /** No request for this long: the tick stops reading the generation between full refreshes (the next request reads it first). */
  static readonly IDLE_AFTER_MS = 10_000;
  /** A request finding no read of the generation under way and none started this recently (the tick fell behind) starts one and waits for it, as the first request after an idle spell always does. */
  static readonly CATCH_UP_AFTER_MS = 250;
  /**
   * Requests wait for that read this long at most after it started: a Redis
   * that does not answer holds requests 50 ms once per read, not each
   * request (the cache then stands, as when the tick's read fails). When
   * the read shows the generation moved, the refresh is awaited in full, as
   * a lookup of a newly registered key awaits it.
   */
  static readonly CATCH_UP_WAIT_MS = 50;

  /** The generation the read a request after an idle spell started found, or undefined when it failed or took past `ms`. */
  private async waitForCatchUp(catchingUp: Promise<number | undefined>, ms: number): Promise<number | undefined> {
    // With a signal: the timer is cleared once the read is in, and a test's fake clock is not moved by it.
    const waited = new AbortController();
    try {
      return await Promise.race([catchingUp, this.clock.sleep(ms, waited.signal).then(() => undefined)]);
    } finally {
      waited.abort();
    }
  }

  /** A refresh, shared by every request waiting for one. */
  private sync(): Promise<void> {
    this.syncing ??= this.refresh().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  /** Picks up registrations, updates and retirements made through other instances (every second, and when the generation moved). */
  async refresh(): Promise<void> {
    const now = this.clock.now();
    // Read before the query: a registration counted in it committed before the bump, so the query sees it.
    const generation = await this.readGeneration();
    const changed = await this.store.changedSince(this.lastRefresh - EntityRegistry.SKEW_MARGIN_MS);
    this.lastRefresh = now;
    for (const { entity, retired } of changed) {
      const known = this.cache.get(entity.key);
      if (retired) {
        if (known) {
          this.forget(entity.key);
          await this.retired(entity.key);
        }
      } else if (known?.updateTime !== entity.updateTime || !sameSecrets(known.secrets, entity.secrets)) {
        this.remember(entity);
        if (!known) await this.registered(entity);
      }
    }
    this.syncedGeneration = generation;
  }

  get(key: string): EntityConfig | undefined {
    return this.cache.get(key);
  }

  /**
   * Cached config of a live entity. A key not in the cache costs no SQL
   * unless an entity was registered since the cache was synced (see
   * {@link RegistrationGeneration}); then one refresh, shared by every
   * request waiting for it, brings the cache up to date.
   */
  async find(key: string): Promise<EntityConfig | undefined> {
    const now = this.clock.now();
    // The first request after an idle spell reads the generation afresh even
    // when the idle tick read it moments ago, or is reading it now: that read
    // may predate a change made elsewhere just before this request.
    const idle = now - this.lastUsed > EntityRegistry.IDLE_AFTER_MS;
    this.lastUsed = now;
    if (idle || (this.readsInFlight === 0 && now - this.lastGenerationRead > EntityRegistry.CATCH_UP_AFTER_MS)) {
      this.catchingUp = this.readGeneration().finally(() => (this.catchingUp = undefined));
      this.catchUpUntil = now + EntityRegistry.CATCH_UP_WAIT_MS;
    }
    if (this.catchingUp && now < this.catchUpUntil) {
      const generation = await this.waitForCatchUp(this.catchingUp, this.catchUpUntil - now);
      // A refresh under way may have read the generation before it moved: then a second one. A failing database leaves the cache as it is.
      for (let attempt = 0; attempt < 2 && generation !== undefined && generation !== this.syncedGeneration; attempt++)
        await this.sync().catch(() => undefined);
    }
    const cached = this.cache.get(key);
    if (cached) return cached;
    // Unreadable (Redis failing): a refresh decides, so a new entity still
    // works; concurrent requests share it, and the per-address limit on
    // failed authentications bounds how many a prober can cause.
    const generation = (await this.readGeneration()) ?? Infinity;
    // The cache is looked at again after every wait: a refresh that finished
    // meanwhile may have added the key. A refresh already under way may have
    // read the generation before this registration: then a second one,
    // started after it, is needed.
    for (let attempt = 0; ; attempt++) {
      const found = this.cache.get(key);
      if (found) return found;
      if (attempt === 2 || (this.syncedGeneration ?? -1) >= generation) return undefined;
      await this.sync();
    }
  }

  async require(key: string): Promise<EntityConfig> {
    const entity = await this.find(key);
    if (!entity) throw new NotFoundError(`no entity with key "${key}"`);
    return entity;
  }

  /** A key of keysInOrder(), which lists the cache's own keys. */
  private cached(key: string): EntityConfig {
    const entity = this.cache.get(key);
    if (!entity) throw new Error(`registry: ordered key "${key}" is not cached`);
    return entity;
  }

  list(): EntityConfig[] {
    return this.keysInOrder().map((k) => this.cached(k));
  }

  /**
   * Up to `limit` live entities in key order, starting after the key `after`
   * (which need not exist); `next` is the key to continue after, or null at the end.
   */
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

  /** Number of live entities. */
  count(): number {
    return this.cache.size;
  }

  private keysInOrder(): string[] {
    // Plain `<` order: keys are ASCII, so this is also the byte order SQL uses.
    this.sortedKeys ??= [...this.cache.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sortedKeys;
  }

  segmentKeys(): string[] {
    const keys: string[] = [];
    for (const entity of this.cache.values()) if (entity.mode !== 'snowflake') keys.push(entity.key);
    return keys;
  }

  async register(input: RegisterInput): Promise<{ entity: EntityConfig; secret: string }> {
    if (input.mode === 'snowflake') refusePoolFields(input);
    if (input.firstId !== undefined && input.startOffset !== undefined)
      throw new InvalidRequestError('give startOffset or firstId, not both');
    const values = withDefaults(input, this.refillTickMs);
    if (input.firstId !== undefined) values.startOffset = this.stride.of(values).firstNumberFrom(input.firstId);
    const broken = checkRules(values);
    if (broken) throw new InvalidRequestError(broken);
    const secret = input.secret ?? newSecret();
    const now = this.clock.now();
    const entity: EntityConfig = { ...values, secrets: [secretRecord(secret, now)], createTime: now, updateTime: now };
    if (!(await this.store.insert(entity)))
      throw new ConflictError(`key "${entity.key}" is already registered (retired keys are never reused)`);
    this.remember(entity);
    // Other instances see the new entity at once.
    await this.announce();
    await this.registered(entity);
    return { entity, secret };
  }

  async update(key: string, patch: UpdateInput): Promise<EntityConfig> {
    const current = await this.require(key);
    if (current.mode === 'snowflake') refusePoolFields(patch);
    const next: EntityConfig = {
      ...current,
      ...stripUndefined(patch),
      updateTime: Math.max(this.clock.now(), current.updateTime + 1),
    };
    const broken = checkRules(next);
    if (broken) throw new InvalidRequestError(broken);
    if (!(await this.store.update(key, next, next.updateTime))) throw new NotFoundError(`no entity with key "${key}"`);
    this.cache.set(key, next);
    await this.announce();
    return next;
  }

  /**
   * The live entity `key` when `secret` is one of its unexpired secrets, else
   * undefined: the same answer, after the same work, for an unknown key and a
   * wrong secret. The one check behind every credential (the native routes'
   * Bearer secret, Tinyid's `token`).
   */
  async authenticate(key: string, secret: string): Promise<EntityConfig | undefined> {
    const found = await this.find(key);
    return secretAccepted(found, secret, this.clock.now()) ? found : undefined;
  }

  /**
   * A new secret, newest first. The old ones stay accepted for
   * `keepOldForSeconds` (their own expiry if sooner), or stop at once when it
   * is 0 or absent, as a rotation after a leak needs.
   */
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

  /**
   * Accepts one more secret (`secret`, or a new random one), until
   * `expiresInSeconds` if given. A secret the entity already accepts is not
   * added twice (`added: false`), so an import can run again.
   */
  async addSecret(
    key: string,
    o: { secret?: string; expiresInSeconds?: number } = {},
  ): Promise<{ id: string; secret: string; added: boolean; expiresAt: number | null }> {
    const secret = o.secret ?? newSecret();
    const hash = hashSecret(secret);
    let result: { id: string; added: boolean; expiresAt: number | null } | undefined;
    await this.changeSecrets(key, (live, now) => {
      const known = live.find((s) => s.hash === hash);
      if (known) {
        result = { id: known.id, added: false, expiresAt: known.expiresAt };
        return undefined;
      }
      const record = secretRecord(secret, now, o.expiresInSeconds ? now + o.expiresInSeconds * 1000 : null);
      result = { id: record.id, added: true, expiresAt: record.expiresAt };
      return [record, ...live];
    });
    if (!result) throw new NotFoundError(`no entity with key "${key}"`);
    return { ...result, secret };
  }

  /** Stops accepting the secret `id`; the last one cannot be removed (rotate instead). */
  async removeSecret(key: string, id: string): Promise<void> {
    await this.changeSecrets(key, (live) => {
      if (!live.some((s) => s.id === id)) throw new NotFoundError(`entity "${key}" has no secret "${id}"`);
      const rest = live.filter((s) => s.id !== id);
      if (rest.length === 0)
        throw new ConflictError(`"${id}" is the only secret of "${key}"; rotate it instead of removing it`);
      return rest;
    });
  }

  /**
   * Writes `next(unexpired secrets, now)` (undefined: nothing to change),
   * refusing more than {@link MAX_SECRETS}, and tells every instance at once:
   * a removed secret must stop working everywhere now, not within a second.
   */
  private async changeSecrets(
    key: string,
    next: (live: EntitySecret[], now: number) => EntitySecret[] | undefined,
  ): Promise<void> {
    const current = await this.require(key);
    const now = this.clock.now();
    const secrets = next(unexpired(current.secrets, now), now);
    if (!secrets) return;
    if (secrets.length > MAX_SECRETS)
      throw new ConflictError(
        `"${key}" would have ${secrets.length} secrets; at most ${MAX_SECRETS} at once (remove one, or rotate without --keep-old-for)`,
      );
    const updateTime = Math.max(now, current.updateTime + 1);
    if (!(await this.store.setSecrets(key, secrets, updateTime)))
      throw new NotFoundError(`no entity with key "${key}"`);
    this.cache.set(key, { ...current, secrets, updateTime });
    await this.announce();
  }

  /** The first number of `entity`'s line whose id is at least `id` (this deployment's stride and the entity's spacing). */
  firstNumberFrom(entity: EntityConfig, id: bigint): bigint {
    return this.stride.of(entity).firstNumberFrom(id);
  }

  async retire(key: string): Promise<void> {
    await this.require(key);
    if (!(await this.store.retire(key, this.clock.now()))) throw new NotFoundError(`no entity with key "${key}"`);
    this.forget(key);
    await this.announce();
    await this.retired(key);
  }

  /** Tells other instances an entity changed; if Redis cannot count it, they see it within their next refresh (≤ 1 s). */
  private async announce(): Promise<void> {
    await this.generation.bump().catch(() => undefined);
  }

  /** Caches a live entity (new or changed). */
  private remember(entity: EntityConfig): void {
    if (!this.cache.has(entity.key)) this.sortedKeys = undefined;
    this.cache.set(entity.key, entity);
  }

  private forget(key: string): void {
    if (this.cache.delete(key)) this.sortedKeys = undefined;
  }
}

function sameSecrets(a: readonly EntitySecret[], b: readonly EntitySecret[]): boolean {
  return a.length === b.length && a.every((s, i) => s.hash === b[i].hash && s.expiresAt === b[i].expiresAt);
}

/** Fields that shape a segment pool: a snowflake entity has none, so setting one is a mistake worth a 400. */
const POOL_FIELDS = [
  'startOffset',
  'firstId',
  'delta',
  'remainder',
  'step',
  'maxPoolSize',
  'minSizePercent',
  'interval',
] as const;

function refusePoolFields(input: Partial<Record<(typeof POOL_FIELDS)[number], unknown>>): void {
  const given = POOL_FIELDS.find((field) => input[field] !== undefined);
  if (given)
    throw new InvalidRequestError(
      `${given}: not used by snowflake entities (their ids come from time, worker and sequence, not a pool)`,
    );
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
