import { createConnection } from 'mysql2/promise';
import { afterEach, expect, it } from 'vitest';
import { entityKeys } from '../../src/redis/keys';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call } from '../support/http';
import { watchEntity } from '../support/outage';
import { type PrivateDeployment, privateDeployment, privateMariadbDeployment } from '../support/private-deployment';
import { type RedisServer, alarmLines, startRedisServer } from '../support/processes';

/** The dependency_unavailable alarms of one kind in the instance's log. */
const unavailableAlarms = (output: { output(): string }, kind: string) =>
  alarmLines(output, 'dependency_unavailable').filter((l) => l.kind === kind);

describeWithServices('dependency errors answer 503 unavailable, never 500 (invariant 7)', { mysql: true }, () => {
  let deployment: PrivateDeployment | undefined;
  const others: RedisServer[] = [];

  afterEach(async () => {
    await deployment?.stop();
    for (const r of others.splice(0)) await r.stop();
    deployment = undefined;
  });

  it('READONLY: the Redis server idpool talks to becomes a replica of another', async () => {
    deployment = await privateDeployment();
    const entity = await watchEntity(await deployment.start());
    await entity.servesAgain();
    const other = await startRedisServer('none');
    others.push(other);
    await deployment.direct.call('REPLICAOF', '127.0.0.1', String(other.port));
    await entity.expectUnavailable(30);
    expect(unavailableAlarms(entity.instance, 'redis_readonly').length).toBe(1); // one alarm, not 30 lines
    await deployment.direct.call('REPLICAOF', 'NO', 'ONE');
    await entity.servesAgain();
    entity.expectUnharmed();
    entity.expectNo500();
  }, 60_000);

  it('OOM: a Redis server at maxmemory with noeviction', async () => {
    deployment = await privateDeployment(['--maxmemory-policy', 'noeviction']);
    const { direct } = deployment;
    const entity = await watchEntity(await deployment.start());
    await entity.servesAgain();
    // Fill it well past its limit (4 MB of other data, then maxmemory 1 MB):
    // taking ids frees memory, so takes go on (idpool_take, allow-oom) and
    // hand out every id the pool holds, but no take brings it back under the
    // limit; the refills are refused with OOM, and once the pool is empty
    // that is the answer.
    await direct.set('filler', 'x'.repeat(4 * 1024 * 1024));
    await direct.config('SET', 'maxmemory', '1mb');
    await expect(direct.set('probe', '1')).rejects.toThrow(/^OOM/);
    const ready = await direct.llen(entityKeys(entity.key).ids);
    const before = entity.issued.length;
    await entity.drain();
    expect(ready).toBeGreaterThan(0);
    expect(entity.issued.length - before).toBe(ready - (ready % 5)); // takes of 5
    await entity.expectUnavailable(30);
    expect(unavailableAlarms(entity.instance, 'redis_oom').length).toBe(1);
    await direct.del('filler');
    await direct.config('SET', 'maxmemory', '0');
    await entity.servesAgain();
    entity.expectUnharmed();
    entity.expectNo500();
  }, 60_000);

  // Found by the chaos run (issue 29): a take that met a restore between
  // mysqldump's DROP TABLE and CREATE TABLE of `application` answered 500.
  it('a database mid-restore: its application table dropped and not yet re-created', async () => {
    deployment = await privateDeployment();
    const entity = await watchEntity(await deployment.start());
    await entity.servesAgain();
    const sql = await createConnection(deployment.databaseUrl);
    try {
      await sql.query('RENAME TABLE application TO application_restoring');
      await entity.drain();
      await entity.expectUnavailable(10);
      expect(unavailableAlarms(entity.instance, 'database_schema').length).toBe(1);
      await sql.query('RENAME TABLE application_restoring TO application');
    } finally {
      await sql.end();
    }
    await entity.servesAgain();
    entity.expectUnharmed();
    entity.expectNo500();
  }, 60_000);
});

describeWithServices(
  'database errors answer 503 unavailable, never 500 (a private mariadbd)',
  { privateMariadb: true },
  () => {
    let deployment: PrivateDeployment | undefined;

    afterEach(async () => {
      await deployment?.stop();
      deployment = undefined;
    });

    it('a database that refuses connections (stopped private mariadbd)', async () => {
      const own = await privateMariadbDeployment();
      deployment = own;
      const entity = await watchEntity(await own.start());
      await entity.servesAgain();
      await own.mariadb.kill9();
      // Drain what the pool holds; then every request needs the database.
      await entity.drain();
      await entity.expectUnavailable(10);
      const admin = await call(`${entity.instance.url}/admin/apps/${entity.key}`, { token: ADMIN_TOKEN });
      expect(admin.status).toBe(503);
      expect(admin.body.error.code).toBe('unavailable');
      expect(admin.headers.get('retry-after')).toMatch(/^\d+$/);
      await own.mariadb.restart();
      await entity.servesAgain();
      entity.expectUnharmed();
      entity.expectNo500();
    }, 90_000);

    it('a read-only database (SET GLOBAL read_only on a private mariadbd; idpool connects without READ ONLY ADMIN)', async () => {
      const own = await privateMariadbDeployment();
      deployment = own;
      const root = await createConnection({ uri: own.databaseUrl.replace(/\/idpool$/, '/') });
      try {
        await root.query('CREATE DATABASE idpool');
        await root.query("CREATE USER 'app'@'127.0.0.1'");
        await root.query("GRANT ALL ON idpool.* TO 'app'@'127.0.0.1'");
        const entity = await watchEntity(
          await own.start({ IDPOOL_DATABASE_URL: `mysql://app@127.0.0.1:${own.mariadb.port}/idpool` }),
        );
        await entity.servesAgain();
        await root.query('SET GLOBAL read_only = ON');
        // Drain what the pool holds; then every take needs a reservation the server refuses (ER_OPTION_PREVENTS_STATEMENT).
        await entity.drain();
        await entity.expectUnavailable(10);
        expect(unavailableAlarms(entity.instance, 'read_only').length).toBe(1);
        await root.query('SET GLOBAL read_only = OFF');
        await entity.servesAgain();
        entity.expectUnharmed();
        entity.expectNo500();
      } finally {
        await root.end();
      }
    }, 90_000);
  },
);
