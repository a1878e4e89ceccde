import { randomUUID } from 'node:crypto';
import type { Database } from './database';

/** The deployment's id (`idpool_meta.deployment_id`, in the row `checkStride` wrote), created on first use; a restore keeps it. */
export async function deploymentId(db: Database): Promise<string> {
  // Whoever writes first wins; every process then reads the same id.
  await db.execute('UPDATE idpool_meta SET deployment_id = ? WHERE id = 1 AND deployment_id IS NULL', [randomUUID()]);
  const rows = await db.query<{ deployment_id: string | null }>('SELECT deployment_id FROM idpool_meta WHERE id = 1');
  const id = rows[0]?.deployment_id;
  if (!id) throw new Error(`${db.description}: idpool_meta holds no deployment id`);
  return id;
}
