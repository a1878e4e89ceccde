import type { Clock } from '../clock';
import { ConfigError } from '../errors';
import { type Database, whileRacing } from '../db/database';
import { withRunner } from '../db/dialects/dialect';
import { classifySqlError } from '../db/errors';

/** Two strides over one number line repeat ids (`n·2 + 0` and `n·3 + 1` meet): a database keeps the first one recorded in `idpool_meta`. */
export class StrideMismatchError extends ConfigError {
  constructor(
    readonly recorded: { count: number; index: number },
    readonly given: { count: number; index: number },
    where: string,
  ) {
    super(
      'IDPOOL_CLUSTER_COUNT/IDPOOL_CLUSTER_INDEX',
      `${where} is used with cluster count ${recorded.count} index ${recorded.index}, this process has count ${given.count} index ${given.index}; two mappings over one number line repeat ids (give this process the recorded mapping, or a database of its own)`,
    );
    this.name = 'StrideMismatchError';
  }
}

interface MetaRow {
  cluster_count: number | string;
  cluster_index: number | string;
}

/** Records the stride on first use, then refuses any other one (throws {@link StrideMismatchError}). */
export async function checkStride(db: Database, count: number, index: number, clock: Clock): Promise<void> {
  const read = async (): Promise<MetaRow | undefined> => {
    try {
      return (await db.query<MetaRow>('SELECT cluster_count, cluster_index FROM idpool_meta WHERE id = 1'))[0];
    } catch (err) {
      // SQLite gives a missing table no code of its own: ask the schema.
      const failure = classifySqlError(err);
      if (failure?.kind !== 'database_schema' && failure?.class !== 'bug') throw err;
      if (await withRunner(db.dataSource, (runner) => runner.hasTable('idpool_meta'))) throw err;
      throw new Error(
        `${db.description} has no idpool_meta table (a schema older than this idpool): start the idpool service of this version on it once, run "npm run migration:run", or pass migrate: true`,
        { cause: err },
      );
    }
  };
  // Processes opening one fresh SQLite file at once: the loser of the write lock is busy, and tries again.
  const record = async () => {
    try {
      await db.execute('INSERT INTO idpool_meta (id, cluster_count, cluster_index, create_time) VALUES (1, ?, ?, ?)', [
        count,
        index,
        clock.now(),
      ]);
    } catch (err) {
      // Another process recorded its stride first: that one stands.
      if (classifySqlError(err)?.kind !== 'duplicate') throw err;
    }
    const recorded = await read();
    if (!recorded) throw new Error('idpool_meta has no row after its stride was recorded');
    return recorded;
  };
  const row = (await read()) ?? (await whileRacing(record, clock));
  const recorded = { count: Number(row.cluster_count), index: Number(row.cluster_index) };
  if (recorded.count !== count || recorded.index !== index)
    throw new StrideMismatchError(recorded, { count, index }, db.description);
}
