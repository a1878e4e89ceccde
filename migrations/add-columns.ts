import type { QueryRunner, TableColumnOptions } from 'typeorm';

/**
 * `ALTER TABLE … ADD COLUMN` for each column, in SQL that MySQL/MariaDB,
 * PostgreSQL and SQLite all read (`varchar(n)`, `integer`, `bigint`, `text`;
 * a default given as an SQL literal). Not the QueryRunner's `addColumns`:
 * that first loads the table's definition, foreign keys included, with a
 * join over `INFORMATION_SCHEMA.KEY_COLUMN_USAGE` and
 * `REFERENTIAL_CONSTRAINTS`, a query MariaDB 10.11 was seen to crash on
 * (signal 11 while building its temporary table) as many schemas were
 * created, migrated and dropped side by side. Nothing here reads
 * `INFORMATION_SCHEMA`.
 */
export async function addColumns(
  queryRunner: QueryRunner,
  table: string,
  columns: TableColumnOptions[],
): Promise<void> {
  const q = (name: string) => queryRunner.manager.dataSource.driver.escape(name);
  for (const column of columns) {
    const type = column.length ? `${column.type}(${column.length})` : column.type;
    const fallback = column.default === undefined ? '' : ` DEFAULT ${String(column.default)}`;
    const nullity = column.isNullable ? '' : ' NOT NULL';
    await queryRunner.query(`ALTER TABLE ${q(table)} ADD COLUMN ${q(column.name)} ${type}${fallback}${nullity}`);
  }
}

/** `CREATE [UNIQUE] INDEX name ON table (columns)`, the same in the three dialects, without loading the table first. */
export async function createIndex(
  queryRunner: QueryRunner,
  table: string,
  index: { name: string; columnNames: string[]; isUnique?: boolean },
): Promise<void> {
  const q = (name: string) => queryRunner.manager.dataSource.driver.escape(name);
  const unique = index.isUnique ? 'UNIQUE ' : '';
  await queryRunner.query(
    `CREATE ${unique}INDEX ${q(index.name)} ON ${q(table)} (${index.columnNames.map(q).join(', ')})`,
  );
}
