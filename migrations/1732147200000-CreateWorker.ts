import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * The `worker` table of docs/design.md "Data model": one row per snowflake worker
 * id, leased by one live instance at a time. Times are Unix ms.
 * `last_timestamp` is at or above every time unit the holder may have used.
 */
export class CreateWorker1732147200000 implements MigrationInterface {
  name = 'CreateWorker1732147200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'worker',
        columns: [
          { name: 'worker_id', type: 'integer', isPrimary: true },
          { name: 'code', type: 'varchar', length: '128', default: "''" },
          { name: 'lease_version', type: 'bigint', default: 0 },
          { name: 'heartbeat_at', type: 'bigint', default: 0 },
          { name: 'last_timestamp', type: 'bigint', default: 0 },
          { name: 'create_time', type: 'bigint' },
          { name: 'update_time', type: 'bigint' },
        ],
      }),
      true,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('worker');
  }
}
