import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { RedisFleetStore } from '../../src/fleet/redis-fleet-store';
import { RedisIdempotencyStore } from '../../src/idempotency/redis-store';
import { systemClock } from '../../src/clock';
import { type Database, openDatabase } from '../../src/db/database';
import { RedisEntityRateLimit } from '../../src/pool/rate-limit';
import { RedisPoolStore } from '../../src/pool/redis-pool-store';
import { RedisRefillLock } from '../../src/pool/refill-lock';
import { loadFunctions } from '../../src/redis/functions';
import { entityKeys, idempotencyBytesKey, workerKeys } from '../../src/redis/keys';
import { ANSWER_TTL_MS } from '../../src/idempotency/store';
import { SqlSegmentAllocator } from '../../src/segment/allocator';
import { incumbentDatabase } from '../../src/segment/incumbent-rows';
import { SqlNumberCounter } from '../../src/segment/number-counter';
import { RedisWorkerHolders } from '../../src/worker/redis-worker-holders';
import { DEFAULTS } from '../../src/config/config';
import { SqlWorkerStore } from '../../src/worker/worker-store';
import {
  REDIS_URL,
  type SqlServer,
  type TestSchema,
  clearPrefix,
  createTestSchema,
  testPrefix,
} from '../support/services';
import { suiteDir } from '../support/temp-dir';
import { entityRateLimitContract } from '../support/contracts/entity-rate-limit';
import { entityStoreContract } from '../support/contracts/entity-store';
import { fleetStoreContract } from '../support/contracts/fleet-store';
import { idempotencyStoreContract } from '../support/contracts/idempotency-store';
import { incumbentDatabaseContract } from '../support/contracts/incumbent-database';
import { numberCounterContract } from '../support/contracts/number-counter';
import { poolStoreContract } from '../support/contracts/pool-store';
import { refillLockContract } from '../support/contracts/refill-lock';
import { segmentAllocatorContract } from '../support/contracts/segment-allocator';
import { workerHoldersContract } from '../support/contracts/worker-holders';
import { workerStoreContract } from '../support/contracts/worker-store';
import { entityConfig } from '../support/entity';
import { incumbentTables } from '../support/incumbent-tables';
import { describeWithServices } from '../support/describe-with-services';
import { sleep } from '../support/wait';

// The same cases run against the fakes in test/unit/store-contracts.test.ts (idempotency: test/unit/idempotency.test.ts;
// the incumbent database: test/unit/live-cutover.test.ts).

/** Resolves once the Redis server's clock has turned to a new second. */
async function nextRedisSecond(redis: Redis): Promise<void> {
  // ioredis types TIME's reply as numbers; the server sends strings.
  const time = async () => ((await redis.time()) as unknown as [string, string]).map(Number);
  const [start, micros] = await time();
  await sleep(1000 - micros / 1000);
  while ((await time())[0] === start) await sleep(2);
}

/** One schema for the suite (MariaDB unless said otherwise); every case starts from empty tables. */
function onSql(server: SqlServer = 'mysql'): { db: () => Database; empty: () => Promise<Database> } {
  let schema: TestSchema;
  let db: Database;
  beforeAll(async () => {
    schema = await createTestSchema(server);
    db = await openDatabase(schema.url);
  });
  afterAll(async () => {
    await db?.close();
    await schema?.drop();
  });
  return {
    db: () => db,
    async empty() {
      await db.execute('DELETE FROM application');
      await db.execute('DELETE FROM worker');
      await db.execute('DELETE FROM number_period');
      return db;
    },
  };
}

describeWithServices('SqlEntityStore on MariaDB keeps the EntityStore contract', { mysql: true }, () => {
  const sql = onSql();
  entityStoreContract(async () => new SqlEntityStore(await sql.empty()));
});

// The entity store's statements on the other two dialects (its conditional writes among them).
describeWithServices('SqlEntityStore on PostgreSQL keeps the EntityStore contract', { postgres: true }, () => {
  const sql = onSql('postgres');
  entityStoreContract(async () => new SqlEntityStore(await sql.empty()));
});

describe('SqlEntityStore on SQLite keeps the EntityStore contract', () => {
  const dir = suiteDir('idpool-entity-store-');
  let n = 0;
  const opened: Database[] = [];
  afterAll(async () => {
    for (const db of opened) await db.close();
  });
  entityStoreContract(async () => {
    const db = await openDatabase(dir.sqliteUrl(`e${n++}.db`));
    opened.push(db);
    return new SqlEntityStore(db);
  });
});

describeWithServices('SqlSegmentAllocator on MariaDB keeps the SegmentAllocator contract', { mysql: true }, () => {
  const sql = onSql();
  segmentAllocatorContract(async () => {
    const db = await sql.empty();
    const entities = new SqlEntityStore(db);
    return {
      allocator: new SqlSegmentAllocator(db),
      async addEntity(key, startOffset) {
        await entities.insert(entityConfig({ key, startOffset }));
      },
    };
  });
});

describeWithServices('SqlWorkerStore on MariaDB keeps the WorkerStore contract', { mysql: true }, () => {
  const sql = onSql();
  workerStoreContract(async () => new SqlWorkerStore(await sql.empty()));
});

describeWithServices('SqlNumberCounter on MariaDB keeps the number counter contract', { mysql: true }, () => {
  const sql = onSql();
  numberCounterContract(async () => new SqlNumberCounter(await sql.empty()));
});

describeWithServices(
  "Leaf's and Tinyid's tables on MariaDB keep the IncumbentDatabase contract",
  { mysql: true },
  () => {
    const schemas: TestSchema[] = [];
    afterAll(async () => {
      for (const schema of schemas) await schema.drop();
    });
    incumbentDatabaseContract(async (kind) => {
      const schema = await createTestSchema('mysql');
      schemas.push(schema);
      await incumbentTables(schema.url);
      return incumbentDatabase(kind, schema.url);
    });
  },
);

/** The shared Redis with this branch's function library; each case on a prefix of its own (`fresh()`), cleared after the suite. */
function onRedis(): { fresh: () => { redis: Redis; prefix: string } } {
  let redis: Redis;
  const prefixes: string[] = [];
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    // This branch's library: the shared server may hold another version's.
    await loadFunctions(redis);
  });
  afterAll(async () => {
    for (const prefix of prefixes) await clearPrefix(redis, prefix);
    redis?.disconnect();
  });
  return {
    fresh() {
      const prefix = testPrefix();
      prefixes.push(prefix);
      return { redis, prefix };
    },
  };
}

describeWithServices('RedisPoolStore keeps the PoolStore contract', { redis: true }, () => {
  const redis = onRedis();
  poolStoreContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    return new RedisPoolStore(client, prefix);
  });

  it('levels: a list of the wrong type is an error in its own place, a counter of the wrong type reads as unset (one call, idpool_levels)', async () => {
    const { redis: client, prefix } = redis.fresh();
    const store = new RedisPoolStore(client, prefix);
    await store.reset('l-ok', -1n);
    await store.push('l-ok', ['1', '2', '3'], 1n, 3n);
    await client.set(entityKeys('l-bad-list', prefix).ids, 'not a list');
    await client.hset(entityKeys('l-bad-counter', prefix).pushed, 'not', 'a counter');
    const levels = await store.levels(['l-ok', 'l-bad-list', 'l-bad-counter', 'l-none']);
    expect(levels[0]).toEqual({ size: 3, taken: 0 });
    expect((levels[1] as Error).message).toMatch(/WRONGTYPE/);
    expect(levels[2]).toEqual({ size: 0, taken: 0 });
    expect(levels[3]).toEqual({ size: 0, taken: 0 });
  });
});

describeWithServices('RedisWorkerHolders keeps the WorkerHolders contract', { redis: true }, () => {
  const redis = onRedis();
  workerHoldersContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    // Both keys under one hash tag: one function may touch them on a Cluster.
    const keys = workerKeys(prefix);
    expect([keys.holders, keys.ceilings].map((k) => k.includes('{workers}'))).toEqual([true, true]);
    return new RedisWorkerHolders(client, prefix);
  });
});

describeWithServices('RedisFleetStore keeps the FleetStore contract', { redis: true }, () => {
  const redis = onRedis();
  fleetStoreContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    return new RedisFleetStore(client, prefix, 60_000);
  });
});

describeWithServices('RedisIdempotencyStore keeps the IdempotencyStore contract', { redis: true }, () => {
  const redis = onRedis();
  idempotencyStoreContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    return new RedisIdempotencyStore(client, systemClock, prefix);
  });

  it("counts a stored answer's bytes in its minute by the Redis clock, until that minute's answers have all expired", async () => {
    const { redis: client, prefix } = redis.fresh();
    const store = new RedisIdempotencyStore(client, systemClock, prefix);
    const redisMinute = async () => Math.floor(Number(((await client.time()) as unknown as [string])[0]) / 60);
    // Stored within one minute of the Redis clock (read before and after).
    let minute: number;
    for (let i = 0; ; i++) {
      minute = await redisMinute();
      await store.once('orders', `k${i}`, 2, async () => ['1', '2']);
      if ((await redisMinute()) === minute) break;
    }
    const bucket = idempotencyBytesKey(minute, prefix);
    expect(Number(await client.get(bucket))).toBeGreaterThan(100);
    // Answers live ANSWER_TTL_MS: the last one stored in this minute expires 5 minutes after its end.
    const expiresAt = await client.pexpiretime(bucket);
    expect(expiresAt).toBe((minute + 1) * 60_000 + ANSWER_TTL_MS);
  });
});

describeWithServices('RedisRefillLock keeps the RefillLock contract', { redis: true }, () => {
  const redis = onRedis();
  refillLockContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    return new RedisRefillLock(client, systemClock, DEFAULTS.refillLockTtlMs, prefix);
  });
});

describeWithServices('RedisEntityRateLimit keeps the EntityRateLimit contract', { redis: true }, () => {
  const redis = onRedis();
  entityRateLimitContract(async () => {
    const { redis: client, prefix } = redis.fresh();
    return { limit: new RedisEntityRateLimit(client, prefix), freshSecond: () => nextRedisSecond(client) };
  });
});
