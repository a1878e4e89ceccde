import { type Clock, within } from '../clock';
import { UnavailableError } from '../errors';

/**
 * A counter every registration, change, secret rotation and retirement
 * bumps, readable by every instance (Redis in service mode). Instances read
 * it often while they serve (one GET; {@link GenerationSync.tick}) and
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

/** The cache {@link GenerationSync} keeps fresh: two queries of the database. */
export interface SyncedCache {
  /** Every live entry, replacing what is cached (start-up). */
  loadAll(): Promise<void>;
  /** The entries changed since the last load or pull. */
  pullChanges(): Promise<void>;
}

/**
 * When the entity cache asks the database, by the shared
 * {@link RegistrationGeneration}: the cache-freshness protocol, apart from
 * what is cached. A refresh reads the generation, then queries, then records
 * the generation read as synced (a change counted in it committed before its
 * bump, so the query saw it). The service's 100 ms {@link tick} refreshes
 * when the generation moved or a second passed; a lookup
 * ({@link lookup}) catches up first when the tick may be behind, and a key
 * missing from the cache costs a refresh only when the generation moved past
 * the synced one. Every wait for the database is a refresh shared by all who
 * need one, and a refresh that read the generation before it moved is
 * followed by a second (two at most).
 */
export class GenerationSync {
  /** The tick refreshes fully at least this often (an idle instance reads the generation only then). */
  static readonly FULL_REFRESH_MS = 1000;
  /** The service's tick while lookups come (`nextTickMs`). */
  static readonly TICK_MS = 100;
  /** No lookup for this long: the tick stops reading the generation between full refreshes (the next lookup reads it first). */
  static readonly IDLE_AFTER_MS = 10_000;
  /** A lookup finding no read of the generation under way and none started this recently (the tick fell behind) starts one and waits for it, as the first lookup after an idle spell always does. */
  static readonly CATCH_UP_AFTER_MS = 250;
  /**
   * Lookups wait for that read this long at most after it started: a Redis
   * that does not answer holds lookups 50 ms once per read, not each
   * lookup (the cache then stands, as when the tick's read fails). When
   * the read shows the generation moved, the refresh is awaited in full, as
   * a lookup of a newly registered key awaits it.
   */
  static readonly CATCH_UP_WAIT_MS = 50;
  /**
   * A lookup waits for the database this long at most, all its refreshes
   * together: a refresh still under way then goes on without it, as a
   * failed one would, so a database that stops answering (a half-open
   * link: each statement is bounded at 3 s, a connect at 3 s more, and a
   * lookup may wait for two refreshes) never holds a request past this.
   * A cached entry then answers as the cache stands; a missing key is a
   * 503 with Retry-After.
   */
  static readonly REFRESH_WAIT_MS = 2000;

  /** The generation the cache is known to include (undefined: not known, the read failed). */
  private synced: number | undefined;
  /** The refresh under way that every lookup needing one shares. */
  private shared: Promise<void> | undefined;
  /** The last refresh {@link load} or {@link refreshIfStale} started (service clock ms), and whether it succeeded. */
  private readonly attempt = { at: 0, ok: true };
  /** When a lookup last came (service clock ms). */
  private lastLookup = Number.NEGATIVE_INFINITY;
  /** Reads of the generation (the tick's, a catch-up's, a lookup's): how many are under way, when the last started. */
  private readonly reads = { inFlight: 0, lastStart: Number.NEGATIVE_INFINITY };
  /** The read a lookup started to catch up, and until when lookups wait for it. */
  private catchingUp: { read: Promise<number | undefined>; until: number } | undefined;

  constructor(
    private readonly cache: SyncedCache,
    private readonly generation: RegistrationGeneration,
    private readonly clock: Clock,
  ) {}

  /** Fills the cache from scratch, synced at the generation read before. */
  async load(): Promise<void> {
    const now = this.clock.now();
    const generation = await this.readGeneration();
    await this.cache.loadAll();
    this.attempt.at = now;
    this.attempt.ok = true;
    this.synced = generation;
  }

  /** Picks up the changes made through other instances (every second, and when the generation moved). */
  async refresh(): Promise<void> {
    // Read before the query: a change counted in it committed before the bump, so the query sees it.
    const generation = await this.readGeneration();
    await this.cache.pullChanges();
    this.synced = generation;
  }

  /**
   * Refreshes when the generation moved since the last sync (another
   * instance changed an entity) or when the last refresh is `maxAgeMs` old;
   * otherwise costs one read of the generation.
   */
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
   * The service's 100 ms tick. While lookups come it is
   * {@link refreshIfStale}; once none has for {@link IDLE_AFTER_MS} it only
   * refreshes every {@link FULL_REFRESH_MS}, and the next lookup reads the
   * generation first. An idle instance then reads it once a second, not
   * ten times (its idle CPU 1.43 → 1.13 % of a core, measured).
   */
  async tick(): Promise<void> {
    const now = this.clock.now();
    // Idle, a tick's worth early counts as due: the tick then runs once a second on the
    // schedule's grid (schedule.ts), and a refresh that started a few ms after one whole
    // second is due again at the next.
    const idle = this.idle(now);
    const fullRefreshMs = GenerationSync.FULL_REFRESH_MS - (idle ? GenerationSync.TICK_MS : 0);
    if (idle && now - this.attempt.at < fullRefreshMs) return;
    await this.refreshIfStale(fullRefreshMs);
  }

  /**
   * How long the tick waits: {@link TICK_MS} while lookups come; idle, a
   * full refresh's period, so an idle instance wakes for it once a second
   * rather than ten times to find nothing to do (a lookup meanwhile reads
   * the generation itself, {@link catchUp}).
   */
  nextTickMs(): number {
    return this.idle(this.clock.now()) ? GenerationSync.FULL_REFRESH_MS : GenerationSync.TICK_MS;
  }

  private idle(now: number): boolean {
    return now - this.lastLookup > GenerationSync.IDLE_AFTER_MS;
  }

  /**
   * What `cached()` finds once the cache is fresh enough to answer: after a
   * catch-up when the tick may be behind, and, when it finds nothing, after
   * the refreshes a generation past the synced one calls for.
   */
  async lookup<T>(cached: () => T | undefined): Promise<T | undefined> {
    const until = this.clock.now() + GenerationSync.REFRESH_WAIT_MS;
    await this.catchUp(until);
    const found = cached();
    if (found !== undefined) return found;
    // Unreadable (Redis failing): a refresh decides, so a new entity still
    // works; concurrent lookups share it, and the per-address limit on
    // failed authentications bounds how many a prober can cause. A database
    // failing here fails the lookup.
    const generation = (await this.readGeneration()) ?? Infinity;
    // The cache is looked at again after every wait: a refresh that finished
    // meanwhile may have added the key.
    const behind = () => cached() === undefined && generation !== this.synced;
    if (!(await this.refreshWhile(behind, 'throw', until)) && behind())
      throw new UnavailableError(
        `the entity registry did not answer within ${GenerationSync.REFRESH_WAIT_MS} ms; retry shortly`,
      );
    return cached();
  }

  /** Tells other instances an entity changed; if the generation cannot be bumped, they see it within their next full refresh (≤ 1 s). */
  async announce(): Promise<void> {
    await this.generation.bump().catch(() => undefined);
  }

  /**
   * The first lookup after an idle spell reads the generation afresh even
   * when the idle tick read it moments ago, or is reading it now: that read
   * may predate a change made elsewhere just before this lookup. So does a
   * lookup finding the tick behind. Lookups within
   * {@link CATCH_UP_WAIT_MS} of that read wait for it, and for the refresh
   * when it moved until `until`; a database failing or slower than that
   * leaves the cache as it is.
   */
  private async catchUp(until: number): Promise<void> {
    const now = this.clock.now();
    const idle = now - this.lastLookup > GenerationSync.IDLE_AFTER_MS;
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
   * Shared refreshes while `behind()` holds, two at most: a refresh already
   * under way may have read the generation before it moved, so a second,
   * started after it, is needed. `failures`: whether a failing one ends the
   * caller, or only its attempt. False when `until` (service clock ms)
   * came first: the refresh under way goes on without this caller.
   */
  private async refreshWhile(behind: () => boolean, failures: 'throw' | 'ignore', until: number): Promise<boolean> {
    for (let attempt = 0; attempt < 2 && behind(); attempt++) {
      const refreshing = this.sharedRefresh().then(
        () => true,
        (err: unknown) => {
          if (failures === 'throw') throw err;
          return true;
        },
      );
      if (!(await within(this.clock, refreshing, until - this.clock.now(), false))) return false;
    }
    return true;
  }

  /** A refresh, shared by every lookup waiting for one. */
  private sharedRefresh(): Promise<void> {
    this.shared ??= this.refresh().finally(() => (this.shared = undefined));
    return this.shared;
  }

  /** The generation now, or undefined when it cannot be read (then the cache is not trusted to be complete). */
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
