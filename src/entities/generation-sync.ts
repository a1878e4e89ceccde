import { type Clock, within } from '../clock';
import { UnavailableError } from '../errors';
import type { EntityCache } from './entity-cache';

/**
 * A counter every entity change bumps, shared by every instance (Redis in service mode). A cache synced at
 * generation g knows every entity registered before g: while it is still g, a key missing from the cache is unknown
 * without asking the database, so unknown keys cost no SQL, and a change elsewhere is seen here at once.
 */
export interface RegistrationGeneration {
  current(): Promise<number>;
  bump(): Promise<void>;
}

/** Registrations through this process only (no Redis): others' show up with the next full refresh (≤ 1 s). */
export class LocalRegistrationGeneration implements RegistrationGeneration {
  private value = 0;
  async current(): Promise<number> {
    return this.value;
  }
  async bump(): Promise<void> {
    this.value++;
  }
}

/**
 * When the entity cache asks the database, by the shared {@link RegistrationGeneration} (ARCHITECTURE.md "The entity
 * cache"). The 100 ms {@link tick} refreshes when the generation moved or a second passed; a {@link lookup} catches
 * up first when the tick may be behind, and a missing key costs a refresh only when the generation moved past the
 * synced one. Every wait for the database is a shared refresh, two at most (the first may predate the move).
 */
export class GenerationSync {
  /** The tick refreshes fully at least this often (an idle instance reads the generation only then). */
  static readonly FULL_REFRESH_MS = 1000;
  static readonly TICK_MS = 100;
  /** No lookup for this long: the tick reads the generation only with full refreshes (a lookup reads it first). */
  static readonly IDLE_AFTER_MS = 10_000;
  /** No read of the generation under way nor started this recently: the tick fell behind, a lookup reads it itself. */
  static readonly CATCH_UP_AFTER_MS = 250;
  /** Lookups wait this long at most for that read: a Redis that does not answer holds them 50 ms once per read. */
  static readonly CATCH_UP_WAIT_MS = 50;
  /**
   * A lookup's whole wait for the database: a half-open link (3 s a statement, 3 s a connect, two refreshes) never
   * holds a request past it; a cached entry then answers as it stands, a missing key is a 503 with Retry-After.
   */
  static readonly REFRESH_WAIT_MS = 2000;

  /** The generation the cache is known to include (undefined: the read failed). */
  private synced: number | undefined;
  private shared: Promise<void> | undefined;
  /** The last refresh {@link load} or {@link refreshIfStale} started (service clock ms), and whether it succeeded. */
  private readonly attempt = { at: 0, ok: true };
  private lastLookup = Number.NEGATIVE_INFINITY;
  /** Reads of the generation: how many are under way, when the last started. */
  private readonly reads = { inFlight: 0, lastStart: Number.NEGATIVE_INFINITY };
  /** The read a lookup started to catch up, and until when lookups wait for it. */
  private catchingUp: { read: Promise<number | undefined>; until: number } | undefined;

  constructor(
    private readonly cache: Pick<EntityCache, 'loadAll' | 'pullChanges'>,
    private readonly generation: RegistrationGeneration,
    private readonly clock: Clock,
  ) {}

  /** Fills the cache, synced at the generation read before. */
  async load(): Promise<void> {
    const now = this.clock.now();
    const generation = await this.readGeneration();
    await this.cache.loadAll();
    this.attempt.at = now;
    this.attempt.ok = true;
    this.synced = generation;
  }

  async refresh(): Promise<void> {
    // Read before the query: a change counted in it committed before the bump, so the query sees it.
    const generation = await this.readGeneration();
    await this.cache.pullChanges();
    this.synced = generation;
  }

  /** Refreshes when the generation moved since the last sync or the last refresh is `maxAgeMs` old. */
  async refreshIfStale(maxAgeMs: number): Promise<void> {
    const generation = await this.readGeneration();
    const moved = generation !== undefined && generation !== this.synced;
    const now = this.clock.now();
    // After a failed refresh (database down) only every `maxAgeMs`, however often the generation moves.
    if (now - this.attempt.at < maxAgeMs && !(moved && this.attempt.ok)) return;
    this.attempt.at = now;
    this.attempt.ok = false;
    await this.refresh();
    this.attempt.ok = true;
  }

  /**
   * {@link refreshIfStale} while lookups come; idle, a full refresh every {@link FULL_REFRESH_MS} only (idle CPU
   * 1.43 → 1.13 % of a core, measured).
   */
  async tick(): Promise<void> {
    const now = this.clock.now();
    // Idle, a tick early counts as due: a refresh a few ms past one second on the schedule's grid is due at the next.
    const idle = this.idle(now);
    const fullRefreshMs = GenerationSync.FULL_REFRESH_MS - (idle ? GenerationSync.TICK_MS : 0);
    if (idle && now - this.attempt.at < fullRefreshMs) return;
    await this.refreshIfStale(fullRefreshMs);
  }

  /** How long the tick waits: {@link TICK_MS} while lookups come, else a full refresh's period. */
  nextTickMs(): number {
    return this.idle(this.clock.now()) ? GenerationSync.FULL_REFRESH_MS : GenerationSync.TICK_MS;
  }

  private idle(now: number): boolean {
    return now - this.lastLookup > GenerationSync.IDLE_AFTER_MS;
  }

  /** What `cached()` finds once the cache is fresh enough: after a catch-up, and on a miss its refreshes. */
  async lookup<T>(cached: () => T | undefined): Promise<T | undefined> {
    const until = this.clock.now() + GenerationSync.REFRESH_WAIT_MS;
    await this.catchUp(until);
    const found = cached();
    if (found !== undefined) return found;
    // Unreadable (Redis failing): a shared refresh decides, so a new entity still works; the failed-authentication
    // limit bounds how many a prober causes.
    const generation = (await this.readGeneration()) ?? Infinity;
    // Looked at again after every wait: a refresh that finished meanwhile may have added the key.
    const behind = () => cached() === undefined && generation !== this.synced;
    if (!(await this.refreshWhile(behind, 'throw', until)) && behind())
      throw new UnavailableError(
        `the entity registry did not answer within ${GenerationSync.REFRESH_WAIT_MS} ms; retry shortly`,
      );
    return cached();
  }

  /** Tells other instances an entity changed; failing that, they see it at their next full refresh (≤ 1 s). */
  async announce(): Promise<void> {
    await this.generation.bump().catch(() => undefined);
  }

  /**
   * The first lookup after an idle spell, or finding the tick behind, reads the generation afresh: the tick's read
   * may predate a change made just before. Lookups within {@link CATCH_UP_WAIT_MS} of it wait for it, and for the
   * refresh it calls for until `until`.
   */
  private async catchUp(until: number): Promise<void> {
    const now = this.clock.now();
    const idle = this.idle(now);
    this.lastLookup = now;
    if (idle || (this.reads.inFlight === 0 && now - this.reads.lastStart > GenerationSync.CATCH_UP_AFTER_MS)) {
      const read: Promise<number | undefined> = this.readGeneration().finally(() => {
        // Only its own: a read hanging past an idle spell must not end the next one's wait.
        if (this.catchingUp?.read === read) this.catchingUp = undefined;
      });
      this.catchingUp = { read, until: now + GenerationSync.CATCH_UP_WAIT_MS };
    }
    const catchingUp = this.catchingUp;
    if (!catchingUp || now >= catchingUp.until) return;
    const generation = await within(this.clock, catchingUp.read, catchingUp.until - now, undefined);
    await this.refreshWhile(() => generation !== undefined && generation !== this.synced, 'ignore', until);
  }

  /**
   * Shared refreshes while `behind()` holds, two at most (one under way may have read the generation before it
   * moved). False when `until` came first: the refresh goes on without this caller.
   */
  private async refreshWhile(behind: () => boolean, failures: 'throw' | 'ignore', until: number): Promise<boolean> {
    for (let attempt = 0; attempt < 2 && behind(); attempt++) {
      const refresh = this.sharedRefresh();
      const refreshing = (failures === 'throw' ? refresh : refresh.catch(() => undefined)).then(() => true);
      if (!(await within(this.clock, refreshing, until - this.clock.now(), false))) return false;
    }
    return true;
  }

  private sharedRefresh(): Promise<void> {
    this.shared ??= this.refresh().finally(() => (this.shared = undefined));
    return this.shared;
  }

  /** The generation now, or undefined when it cannot be read (the cache is then not trusted to be complete). */
  private async readGeneration(): Promise<number | undefined> {
    this.reads.lastStart = this.clock.now();
    this.reads.inFlight++;
    try {
      return await this.generation.current();
    } catch {
      return undefined;
    } finally {
      this.reads.inFlight--;
    }
  }
}
