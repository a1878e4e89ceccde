import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { addColumns } from './add-columns';

/**
 * Columns for entities moved from Leaf and Tinyid (docs/migrating.md):
 * `delta`/`remainder`, the spacing of the number line (ids ≡ remainder mod
 * delta; 1 and 0 keep every existing entity as it was); `compat`, the
 * credential-free protocols an admin opted the entity in to (comma-separated,
 * empty by default); `secrets`, every accepted secret as JSON
 * `[{id, hash, createTime, expiresAt}]` (null: only `secret_hash`, as rows
 * written before this migration). `secret_hash` stays the newest secret's
 * hash. Written with `addColumns` (add-columns.ts) so it runs on MySQL/MariaDB,
 * PostgreSQL and SQLite alike.
 */
export class EntitySpacingCompatSecrets1764115200000 implements MigrationInterface {
  name = 'EntitySpacingCompatSecrets1764115200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumns(queryRunner, 'application', [
      { name: 'delta', type: 'integer', default: 1 },
      { name: 'remainder', type: 'integer', default: 0 },
      { name: 'compat', type: 'varchar', length: '64', default: "''" },
      { name: 'secrets', type: 'text', isNullable: true },
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const column of ['secrets', 'compat', 'remainder', 'delta'])
      await queryRunner.dropColumn('application', column);
  }
}
