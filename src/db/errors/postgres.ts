import pg from 'pg';
import { QueryRunnerAlreadyReleasedError } from 'typeorm';
import { type Classifier, type Failure, failure, systemFailure } from '../../failure';
import { pgClientFailure } from '../postgres-driver';

/** SQLSTATE codes of their own (PostgreSQL, Appendix A), before their class. */
const SQLSTATES: Record<string, Failure> = {
  '40001': failure('busy', 'deadlock'), // serialization_failure
  '40P01': failure('busy', 'deadlock'), // deadlock_detected
  '55P03': failure('busy', 'lock_timeout'), // lock_not_available (lock_timeout)
  '57014': failure('busy', 'timeout'), // query_canceled (statement_timeout)
  '53300': failure('busy', 'too_many_connections'), // too_many_connections
  '53100': failure('unavailable', 'disk'), // disk_full
  '53200': failure('unavailable', 'out_of_memory'), // out_of_memory
  '25006': failure('unavailable', 'read_only'), // read_only_sql_transaction (hot standby, default_transaction_read_only)
  '28000': failure('unavailable', 'auth'), // invalid_authorization_specification
  '28P01': failure('unavailable', 'auth'), // invalid_password
  '23505': failure('conflict', 'duplicate'), // unique_violation
  '22003': failure('invalid', 'out_of_range'), // numeric_value_out_of_range
  '42P01': failure('unavailable', 'database_schema'), // undefined_table (a restore under way)
  '3D000': failure('unavailable', 'database_schema'), // invalid_catalog_name
};

/** SQLSTATE classes (the first two characters). */
const CLASSES: Record<string, Failure> = {
  '08': failure('unavailable', 'lost'), // connection exception
  '53': failure('unavailable', 'out_of_memory'), // insufficient resources
  '57': failure('unavailable', 'lost'), // operator intervention (admin_shutdown, cannot_connect_now, …)
  '58': failure('unavailable', 'disk'), // system error (I/O)
  '22': failure('invalid', 'constraint'), // data exception
  '23': failure('invalid', 'constraint'), // integrity constraint violation
};

/** node-postgres: a server's `DatabaseError` by its SQLSTATE; its own failures as db/postgres-driver.ts marked them. */
export const classifyPostgresError: Classifier = (err) => {
  if (err instanceof pg.DatabaseError) {
    const code = err.code ?? '';
    if (Object.hasOwn(SQLSTATES, code)) return SQLSTATES[code];
    return Object.hasOwn(CLASSES, code.slice(0, 2)) ? CLASSES[code.slice(0, 2)] : failure('bug', 'other');
  }
  // TypeORM's runner releases itself when its connection fails, so the next query on it meets this error;
  // idpool releases a runner only after its last query.
  if (err instanceof QueryRunnerAlreadyReleasedError) return failure('unavailable', 'lost');
  const client = pgClientFailure(err);
  if (client) return systemFailure(err) ?? failure('unavailable', client);
  return undefined;
};
