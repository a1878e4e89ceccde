import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { addColumns } from './add-columns';

/**
 * `idpool_meta.deployment_id` (docs/design.md "Data model"): a random id
 * naming the deployment this database belongs to, written by the first
 * service that starts on it after this migration. The service records it
 * in Redis, so a second deployment (another database) pointed at the same
 * Redis keys is refused instead of sharing pools with this one.
 */
export class AddDeploymentId1732406400000 implements MigrationInterface {
  name = 'AddDeploymentId1732406400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumns(queryRunner, 'idpool_meta', [
      { name: 'deployment_id', type: 'varchar', length: '64', isNullable: true },
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('idpool_meta', 'deployment_id');
  }
}
