import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../clock';
import { DEFAULT_PREFIX, entityKeys } from '../redis/keys';
import type { HeldLock, RefillLock } from './pool-store';
import type { RedisClient } from '../redis/connection';
import { callFunction } from '../redis/functions';

/**
 * A holder renews every `ttl / 4`, and a lock with less than that left is taken over (lock_acquire-1.lua): a live
 * holder must be half a lease late, a dead one blocks its entity for half to three quarters of a lease.
 */
const EXTENSIONS_PER_LEASE = 4;

/**
 * Refill lock on Redis: a lease on `idpool:{key}:lock` its holder extends while its refill runs (lock_acquire-1.lua,
 * lock_extend-1.lua, lock_release-1.lua); a held lock is skipped, not queued for. Renewals stop when the refill ends,
 * an extension fails or finds the lock not its own, or the connection closes (a Cluster client reports only its own
 * close): a holder cut off may be talking to a promoted replica, so its locks lapse within a lease. Its refill goes on;
 * the fence refuses its segment if a newer one went in first (docs/design.md invariant 3).
 */
export class RedisRefillLock implements RefillLock {
  /** Bumped each time the connection closes: leases taken before stop being extended. */
  private connection = 0;
  private readonly extendEveryMs: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly clock: Clock,
    /** The lease (IDPOOL_REFILL_LOCK_TTL_MS; its default's measurements are in config/'s DEFAULTS). */
    private readonly ttlMs: number,
    private readonly prefix = DEFAULT_PREFIX,
    /** Who holds a lock, as its token says (`host:pid`): an operator reading the key sees the holder. */
    private readonly owner = `${hostname()}:${process.pid}`,
  ) {
    this.extendEveryMs = Math.max(1, Math.floor(ttlMs / EXTENSIONS_PER_LEASE));
    redis.on('close', () => this.connection++);
  }

  /** The lock, or null when a live holder has it; a server refusing the call throws (the refill's failure, a short take's 503). */
  async acquire(entityKey: string): Promise<HeldLock | null> {
    const key = entityKeys(entityKey, this.prefix).lock;
    const token = `${this.owner}:${randomBytes(6).toString('hex')}`;
    const connection = this.connection;
    const taken = await callFunction<number>(
      this.redis,
      'idpool_lock_acquire',
      [key],
      [token, this.ttlMs, this.extendEveryMs],
    );
    if (taken === 0) return null;
    const stop = new AbortController();
    void this.extend(key, token, connection, stop.signal);
    return {
      release: async () => {
        stop.abort();
        // After an extension on the wire (one connection keeps order); lost with it, the lock lapses within a lease.
        await callFunction(this.redis, 'idpool_lock_release', [key], [token]).catch(() => undefined);
      },
    };
  }

  /** Renews the lease every extendEveryMs until `stop`, a lost lock or a closed connection. */
  private async extend(key: string, token: string, connection: number, stop: AbortSignal): Promise<void> {
    for (;;) {
      await this.clock.sleep(this.extendEveryMs, stop);
      if (stop.aborted || this.connection !== connection) return;
      const extended = await callFunction<number>(this.redis, 'idpool_lock_extend', [key], [token, this.ttlMs]).catch(
        () => 0,
      );
      if (extended !== 1) return;
    }
  }
}
