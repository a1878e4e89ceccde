import { type Classifier, type Failure, failure, systemFailure } from '../../failure';

/**
 * mysql2's server errors by `errno`, not mysql2's `code` name: those are MySQL's, and MariaDB gives some numbers
 * other meanings (4025). A failed connection carries `fatal: true` and a system or `PROTOCOL_*` code.
 */
const SERVER_ERRORS = new Map<number, Failure>([
  [1040, failure('busy', 'too_many_connections')], // ER_CON_COUNT_ERROR
  [1203, failure('busy', 'too_many_connections')], // ER_TOO_MANY_USER_CONNECTIONS
  [1205, failure('busy', 'lock_timeout')], // ER_LOCK_WAIT_TIMEOUT
  [1213, failure('busy', 'deadlock')], // ER_LOCK_DEADLOCK
  // A table re-created under a transaction's snapshot (a restore under way): rolled back, to be tried again as a deadlock is.
  [1412, failure('busy', 'deadlock')], // ER_TABLE_DEF_CHANGED
  [1317, failure('busy', 'timeout')], // ER_QUERY_INTERRUPTED (KILL QUERY, max_statement_time on MySQL)
  [1969, failure('busy', 'timeout')], // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
  [3024, failure('busy', 'timeout')], // ER_QUERY_TIMEOUT (MySQL max_execution_time)
  [1053, failure('unavailable', 'lost')], // ER_SERVER_SHUTDOWN
  [1927, failure('unavailable', 'lost')], // ER_CONNECTION_KILLED (MariaDB)
  [1158, failure('unavailable', 'lost')], // ER_NET_READ_ERROR
  [1159, failure('unavailable', 'lost')], // ER_NET_READ_INTERRUPTED
  [1160, failure('unavailable', 'lost')], // ER_NET_ERROR_ON_WRITE
  [1161, failure('unavailable', 'lost')], // ER_NET_WRITE_INTERRUPTED
  [1290, failure('unavailable', 'read_only')], // ER_OPTION_PREVENTS_STATEMENT (--read-only)
  [1836, failure('unavailable', 'read_only')], // ER_READ_ONLY_MODE
  [1792, failure('unavailable', 'read_only')], // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  [1045, failure('unavailable', 'auth')], // ER_ACCESS_DENIED_ERROR
  [1698, failure('unavailable', 'auth')], // ER_ACCESS_DENIED_NO_PASSWORD_ERROR (MariaDB: an unknown user, or one without a password login)
  [1044, failure('unavailable', 'auth')], // ER_DBACCESS_DENIED_ERROR
  [1129, failure('unavailable', 'auth')], // ER_HOST_IS_BLOCKED
  [1130, failure('unavailable', 'auth')], // ER_HOST_NOT_PRIVILEGED
  [1021, failure('unavailable', 'disk')], // ER_DISK_FULL
  [1114, failure('unavailable', 'disk')], // ER_RECORD_FILE_FULL
  [1037, failure('unavailable', 'out_of_memory')], // ER_OUTOFMEMORY
  [1041, failure('unavailable', 'out_of_memory')], // ER_OUT_OF_RESOURCES
  [1062, failure('conflict', 'duplicate')], // ER_DUP_ENTRY
  [1022, failure('conflict', 'duplicate')], // ER_DUP_KEY
  [1586, failure('conflict', 'duplicate')], // ER_DUP_ENTRY_WITH_KEY_NAME
  [1264, failure('invalid', 'out_of_range')], // ER_WARN_DATA_OUT_OF_RANGE
  [1690, failure('invalid', 'out_of_range')], // ER_DATA_OUT_OF_RANGE (BIGINT value is out of range)
  [1406, failure('invalid', 'constraint')], // ER_DATA_TOO_LONG
  [1048, failure('invalid', 'constraint')], // ER_BAD_NULL_ERROR
  [1451, failure('invalid', 'constraint')], // ER_ROW_IS_REFERENCED_2
  [1452, failure('invalid', 'constraint')], // ER_NO_REFERENCED_ROW_2
  [4025, failure('invalid', 'constraint')], // ER_CONSTRAINT_FAILED (MariaDB CHECK)
  [3819, failure('invalid', 'constraint')], // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
  // A database without idpool's tables or database: a restore under way (mysqldump drops and re-creates each table).
  [1146, failure('unavailable', 'database_schema')], // ER_NO_SUCH_TABLE
  [1049, failure('unavailable', 'database_schema')], // ER_BAD_DB_ERROR
]);

/** mysql2's own codes for a connection that failed under a statement (db/mysql-driver.ts raises the timeout one too). */
const CLIENT_CODES: Record<string, Failure> = {
  PROTOCOL_SEQUENCE_TIMEOUT: failure('unavailable', 'timeout'),
  PROTOCOL_CONNECTION_LOST: failure('unavailable', 'lost'),
  PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR: failure('unavailable', 'lost'),
  PROTOCOL_ENQUEUE_AFTER_QUIT: failure('unavailable', 'lost'),
  PROTOCOL_ENQUEUE_HANDSHAKE_TWICE: failure('bug', 'other'),
};

export const classifyMysqlError: Classifier = (err) => {
  const e = err as { errno?: unknown; sqlState?: unknown; code?: unknown; fatal?: unknown };
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string')
    return SERVER_ERRORS.get(e.errno) ?? failure('bug', 'other');
  if (typeof e.code === 'string' && Object.hasOwn(CLIENT_CODES, e.code)) return CLIENT_CODES[e.code];
  // mysql2 marks an error that ended its connection `fatal` ("Can't add new command when connection is in closed state" has no code).
  if (e.fatal === true) return systemFailure(err) ?? failure('unavailable', 'lost');
  return undefined;
};
