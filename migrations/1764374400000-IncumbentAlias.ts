import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { addColumns, createIndex } from './add-columns';

/**
 * `alias`: the incumbent's tag an imported entity also answers to on Leaf's
 * and Tinyid's routes, when that tag does not fit idpool's keys (Leaf's
 * `order:v2` imported as `order_v2`, `idpool apps import-from --key`); null
 * for every other entity. Unique, so one tag names one entity (retired ones
 * included, as keys are never reused); several NULLs are allowed on
 * MySQL/MariaDB, PostgreSQL and SQLite alike. 190 characters, as the
 * `incumbent` key it comes from: a utf8mb4 index stays under InnoDB's 767 bytes.
 */
export class IncumbentAlias1764374400000 implements MigrationInterface {
  name = 'IncumbentAlias1764374400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumns(queryRunner, 'application', [{ name: 'alias', type: 'varchar', length: '190', isNullable: true }]);
    await createIndex(queryRunner, 'application', {
      name: 'uniq_application_alias',
      columnNames: ['alias'],
      isUnique: true,
    });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('application', 'uniq_application_alias');
    await queryRunner.dropColumn('application', 'alias');
  }
}
