import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * `idpool_meta` (docs/design.md "Data model"): one row (id = 1) recording the
 * cluster mapping (IDPOOL_CLUSTER_COUNT / _INDEX) the database is used with.
 * Left empty here: the first service or library that opens the database
 * records its own mapping (so an existing database adopts the first mapping
 * that opens it after this migration), and every later one must match it.
 * Built with the QueryRunner schema API so it runs on MySQL/MariaDB,
 * PostgreSQL and SQLite alike.
 */
export class CreateMeta1732320000000 implements MigrationInterface {
  name = 'CreateMeta1732320000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'idpool_meta',
        columns: [
          { name: 'id', type: 'integer', isPrimary: true },
          { name: 'cluster_count', type: 'integer' },
          { name: 'cluster_index', type: 'integer' },
          { name: 'create_time', type: 'bigint' },
        ],
      }),
      true,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('idpool_meta');
  }
}
