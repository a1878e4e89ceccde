import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/** The `application` table of docs/design.md "Data model". Times are Unix ms. */
export class CreateApplication1732060800000 implements MigrationInterface {
  name = 'CreateApplication1732060800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'application',
        columns: [
          { name: 'id', type: 'integer', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'entity_key', type: 'varchar', length: '64', isUnique: true },
          { name: 'entity_name', type: 'varchar', length: '128' },
          { name: 'id_mode', type: 'varchar', length: '16', default: "'segment'" },
          { name: 'increasing_type', type: 'integer', default: 1 },
          { name: 'start_offset', type: 'bigint', default: 0 },
          { name: 'step', type: 'integer', default: 1000 },
          { name: 'current_offset', type: 'bigint', default: 0 },
          { name: 'max_size_per_times', type: 'integer', default: 1000 },
          { name: 'max_size_per_second', type: 'integer', default: 5000 },
          { name: 'min_size_percent', type: 'integer', default: 80 },
          { name: 'interval', type: 'integer', default: 100 },
          { name: 'max_pool_size', type: 'integer', default: 300000 },
          { name: 'secret_hash', type: 'varchar', length: '64' },
          { name: 'create_time', type: 'bigint' },
          { name: 'update_time', type: 'bigint' },
          { name: 'deleted_at', type: 'bigint', default: 0 },
        ],
        indices: [{ name: 'idx_application_update_time', columnNames: ['update_time'] }],
      }),
      true,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('application');
  }
}
