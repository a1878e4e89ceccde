import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database';
import { StrideMismatchError, createIdGenerator } from '../../src/library';
import { runToExit, startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { createTestSchema } from '../support/services';
import { suiteDir } from '../support/temp-dir';

describe('one stride per database (idpool_meta)', () => {
  const dir = suiteDir('idpool-meta-');

  it('the service records its mapping at first start and another refuses to start, naming both (exit 2, one line)', async () => {
    const url = dir.sqliteUrl('svc.db');
    const first = await startInstance({
      IDPOOL_DATABASE_URL: url,
      IDPOOL_CLUSTER_COUNT: '2',
      IDPOOL_CLUSTER_INDEX: '0',
    });
    await first.stop();
    const other = await runToExit({ IDPOOL_DATABASE_URL: url, IDPOOL_CLUSTER_COUNT: '3', IDPOOL_CLUSTER_INDEX: '1' });
    expect(other.code).toBe(2);
    const lines = other.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /IDPOOL_CLUSTER_COUNT\/IDPOOL_CLUSTER_INDEX: .*cluster count 2 index 0, this process has count 3 index 1/,
    );
    // The same mapping starts again.
    const again = await startInstance({
      IDPOOL_DATABASE_URL: url,
      IDPOOL_CLUSTER_COUNT: '2',
      IDPOOL_CLUSTER_INDEX: '0',
    });
    await again.stop();
  }, 60_000);

  it('createIdGenerator refuses a mapping other than the recorded one; an existing database adopts the first', async () => {
    const url = dir.sqliteUrl('lib.db');
    const db = await openDatabase(url);
    // A database migrated before any mapping was recorded (as after upgrading): the first opener's mapping is adopted.
    await db.close();
    const first = await createIdGenerator({ databaseUrl: url, strideCount: 4, strideIndex: 3 });
    await first.close();
    const err = await createIdGenerator({ databaseUrl: url }).then(
      () => undefined,
      (e) => e,
    );
    expect(err).toBeInstanceOf(StrideMismatchError);
    expect(err.message).toContain('cluster count 4 index 3, this process has count 1 index 0');
    const same = await createIdGenerator({ databaseUrl: url, strideCount: 4, strideIndex: 3 });
    await same.close();
  });
});

describeWithServices('one stride per database on MariaDB', { mysql: true }, () => {
  it('works the same on MariaDB (QueryRunner-built table)', async () => {
    const schema = await createTestSchema();
    try {
      const gen = await createIdGenerator({ databaseUrl: schema.url, migrate: true, strideCount: 2, strideIndex: 1 });
      await gen.close();
      await expect(createIdGenerator({ databaseUrl: schema.url, strideCount: 2, strideIndex: 0 })).rejects.toThrow(
        /count 2 index 1, this process has count 2 index 0/,
      );
    } finally {
      await schema.drop();
    }
  });
});
