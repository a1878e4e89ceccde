import { ConfigError } from '../config/config';
import type { Database } from '../db/database';

/**
 * Two cluster mappings over one number line repeat ids (`n·2 + 0` and
 * `n·3 + 1` meet), so a database is used with one mapping only: the first
 * process to open it records its own in `idpool_meta`; a later one with
 * another is refused, naming both.
 */
export class ClusterMappingError extends ConfigError {
  constructor(
    readonly recorded: { count: number; index: number },
    readonly given: { count: number; index: number },
    where: string,
  ) {
    super(
      'IDPOOL_CLUSTER_COUNT/IDPOOL_CLUSTER_INDEX',
      `${where} is used with cluster count ${recorded.count} index ${recorded.index}, this process has count ${given.count} index ${given.index}; two mappings over one number line repeat ids (give this process the recorded mapping, or a database of its own)`,
    );
    this.name = 'ClusterMappingError';
  }
}

interface MetaRow {
  cluster_count: number | string;
  cluster_index: number | string;
}

/** Records the mapping on first use, then refuses any other one (throws {@link ClusterMappingError}). */
export async function checkClusterMapping(db: Database, count: number, index: number, now: number): Promise<void> {
  const read = async () => {
    try {
      return (await db.query<MetaRow>('SELECT cluster_count, cluster_index FROM idpool_meta WHERE id = 1'))[0];
    } catch (err) {
      if (!/no such table|doesn't exist|does not exist/i.test(String((err as Error)?.message))) throw err;
      throw new Error(`${db.description} has no idpool_meta table (a schema older than this idpool): start the idpool service of this version on it once, run "npm run migration:run", or pass migrate: true`);
    }
  };
  let row = await read();
  if (!row) {
    try {
      await db.execute('INSERT INTO idpool_meta (id, cluster_count, cluster_index, create_time) VALUES (1, ?, ?, ?)', [count, index, now]);
    } catch (err) {
      // Another process recorded its mapping first: that one stands.
      if (!/duplicate|unique|constraint/i.test(String((err as Error)?.message))) throw err;
    }
    row = await read();
  }
  const recorded = { count: Number(row.cluster_count), index: Number(row.cluster_index) };
  if (recorded.count !== count || recorded.index !== index) throw new ClusterMappingError(recorded, { count, index }, db.description);
}
