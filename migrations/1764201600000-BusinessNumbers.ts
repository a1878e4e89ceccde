import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';
import { addColumns } from './add-columns';

/**
 * Business numbers (docs/numbers.md): the template, reset period and zone
 * of an entity (null for plain ids; fixed once registered), and
 * `number_period`, one counter per (entity, period): `seq` is the highest
 * sequence reserved in that period, `period_end` (Unix ms) when the period
 * ends, so rows of periods long over can be pruned. Additive only: built
 * with `addColumns` (add-columns.ts) and the QueryRunner's createTable so it runs on MySQL/MariaDB, PostgreSQL
 * and SQLite alike.
 */
export class BusinessNumbers1764201600000 implements MigrationInterface {
  name = 'BusinessNumbers1764201600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumns(queryRunner, 'application', [
      { name: 'number_format', type: 'varchar', length: '64', isNullable: true },
      { name: 'number_reset', type: 'varchar', length: '8', isNullable: true },
      { name: 'number_time_zone', type: 'varchar', length: '64', isNullable: true },
    ]);
    await queryRunner.createTable(
      new Table({
        name: 'number_period',
        columns: [
          { name: 'entity_key', type: 'varchar', length: '64', isPrimary: true },
          { name: 'period', type: 'varchar', length: '10', isPrimary: true },
          { name: 'seq', type: 'bigint', default: 0 },
          { name: 'period_end', type: 'bigint' },
          { name: 'update_time', type: 'bigint' },
        ],
        indices: [{ name: 'idx_number_period_end', columnNames: ['period_end'] }],
      }),
      true,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('number_period');
    for (const column of ['number_time_zone', 'number_reset', 'number_format'])
      await queryRunner.dropColumn('application', column);
  }
}
