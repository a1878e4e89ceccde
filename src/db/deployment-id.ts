import { randomUUID } from 'node:crypto';
import type { Database } from './database';

/**
 * The id of the deployment this database belongs to (`idpool_meta.deployment_id`),
 * created on first use. The row exists: `checkStride` recorded it when the
 * database was opened. A database restored from this deployment's backup
 * keeps its id; a fresh database (another environment) gets its own.
 */
export async function deploymentId(db: Database): Promise<string> {
  // Whoever writes first wins; every process then reads the same id.
  await db.execute('UPDATE idpool_meta SET deployment_id = ? WHERE id = 1 AND deployment_id IS NULL', [randomUUID()]);
  const rows = await db.query<{ deployment_id: string | null }>('SELECT deployment_id FROM idpool_meta WHERE id = 1');
  const id = rows[0]?.deployment_id;
  if (!id) throw new Error(`${db.description}: idpool_meta holds no deployment id`);
  return id;
}
