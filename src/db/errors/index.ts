import { type Failure, classifyWith } from '../../failure';
import { classifyMysqlError } from './mysql';
import { classifyPostgresError } from './postgres';
import { classifySqliteError } from './sqlite';

export { classifyMysqlError, classifyPostgresError, classifySqliteError };

/** What a SQL failure (any dialect's driver, or TypeORM's error wrapping it) means; undefined when no SQL driver raised it. */
export function classifySqlError(err: unknown): Failure | undefined {
  return classifyWith([classifyMysqlError, classifyPostgresError, classifySqliteError], err);
}
