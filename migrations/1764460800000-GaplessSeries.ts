import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';
import { addColumns, createIndex } from './add-columns';

/**
 * Gapless series (docs/numbers.md "Gapless series"): `number_gapless` marks a
 * business-number entity whose numbers are issued one transaction at a time
 * (0 for every other entity); `gapless_counter` is each (entity, period)'s
 * counter, apart from `number_period` (whose rows are pruned two days after
 * their period: a gapless counter is never pruned, the ledger beside it is
 * kept for the auditor); `gapless_number` is the ledger, one row per number
 * ever issued, voided or entered lost, written in the same transaction as
 * the counter. `idempotency_key` is kept on the first row of each take,
 * with `take_count`, and is unique per entity (several NULLs are allowed on
 * MySQL/MariaDB, PostgreSQL and SQLite alike); on MySQL/MariaDB it is
 * compared byte for byte (`utf8mb4_bin`), as the header is: `abc` and `ABC`
 * are two keys.
 */
export class GaplessSeries1764460800000 implements MigrationInterface {
  name = 'GaplessSeries1764460800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.manager.dataSource.driver.options.type === 'mysql';
    await addColumns(queryRunner, 'application', [
      { name: 'number_gapless', type: 'integer', default: 0, isNullable: false },
    ]);
    await queryRunner.createTable(
      new Table({
        name: 'gapless_counter',
        columns: [
          { name: 'entity_key', type: 'varchar', length: '64', isPrimary: true },
          { name: 'period', type: 'varchar', length: '10', isPrimary: true },
          { name: 'seq', type: 'bigint', default: 0 },
          { name: 'update_time', type: 'bigint' },
        ],
      }),
      true,
    );
    await queryRunner.createTable(
      new Table({
        name: 'gapless_number',
        columns: [
          { name: 'entity_key', type: 'varchar', length: '64', isPrimary: true },
          { name: 'period', type: 'varchar', length: '10', isPrimary: true },
          { name: 'seq', type: 'bigint', isPrimary: true },
          { name: 'number', type: 'varchar', length: '100' },
          { name: 'issued_at', type: 'bigint' },
          {
            name: 'idempotency_key',
            type: 'varchar',
            length: '128',
            isNullable: true,
            ...(mysql && { charset: 'utf8mb4', collation: 'utf8mb4_bin' }),
          },
          { name: 'take_count', type: 'integer', isNullable: true },
          { name: 'reference', type: 'varchar', length: '128', isNullable: true },
          { name: 'status', type: 'varchar', length: '8' },
          { name: 'reason', type: 'varchar', length: '255', isNullable: true },
          { name: 'voided_at', type: 'bigint', isNullable: true },
        ],
      }),
      true,
    );
    await createIndex(queryRunner, 'gapless_number', {
      name: 'uniq_gapless_number_key',
      columnNames: ['entity_key', 'idempotency_key'],
      isUnique: true,
    });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('gapless_number');
    await queryRunner.dropTable('gapless_counter');
    await queryRunner.dropColumn('application', 'number_gapless');
  }
}
