import { classifyMysqlError, classifyPostgresError, classifySqliteError } from '../db/errors';
import { type Failure, classifyWith, isRetryable } from '../failure';
import { classifyRedisError } from '../redis/errors';

/** What an error from any of idpool's dependencies means (undefined: none of their drivers raised it). */
export function classifyDependencyError(err: unknown): Failure | undefined {
  return classifyWith([classifyRedisError, classifyMysqlError, classifyPostgresError, classifySqliteError], err);
}

/**
 * The kind of dependency failure `err` is, for the alarm (`redis_readonly` for a Redis reply, else `refused`, `lost`,
 * `lock_timeout`, …), or undefined when a retry (after a 503 with Retry-After) may not cure it.
 */
export function dependencyFailure(err: unknown): string | undefined {
  const found = classifyDependencyError(err);
  if (!isRetryable(found)) return undefined;
  return found?.reply ? `redis_${found.reply.toLowerCase()}` : found?.kind;
}
