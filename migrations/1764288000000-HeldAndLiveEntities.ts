import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { addColumns } from './add-columns';

/**
 * Columns for moving from Leaf and Tinyid without a maintenance window
 * (docs/migrating.md): `held`, why an entity is registered but served on no
 * route (null: served); `incumbent`, the row it was imported from
 * (`leaf:TAG` / `tinyid:TYPE`, null for entities registered natively);
 * `live`, 1 while its segments are reserved from that row rather than from
 * `current_offset` (a live cutover); `live_reserved`, the numbers idpool
 * reserved from the row so far (how `--finish` tells idpool's advances of
 * the row from the incumbent's). Additive, with defaults that leave every
 * existing entity as it was; `addColumns` (add-columns.ts) runs it on
 * MySQL/MariaDB, PostgreSQL and SQLite alike.
 */
export class HeldAndLiveEntities1764288000000 implements MigrationInterface {
  name = 'HeldAndLiveEntities1764288000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumns(queryRunner, 'application', [
      { name: 'held', type: 'varchar', length: '255', isNullable: true },
      { name: 'incumbent', type: 'varchar', length: '200', isNullable: true },
      { name: 'live', type: 'integer', default: 0 },
      { name: 'live_reserved', type: 'bigint', default: 0 },
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const column of ['live_reserved', 'live', 'incumbent', 'held'])
      await queryRunner.dropColumn('application', column);
  }
}
