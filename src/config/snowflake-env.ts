import { ConfigError } from '../errors';
import { Snowflake, type SnowflakeOptions } from '../snowflake/snowflake';
import { loadConfig } from './config';

/** `Snowflake.fromEnv`: the worker id in `IDPOOL_WORKER_ID`, the layout in `IDPOOL_SNOWFLAKE_*`. */
export function snowflakeFromEnv(
  env?: Record<string, string | undefined>,
  options: Omit<SnowflakeOptions, 'layout' | 'workerId' | 'worker'> = {},
): Snowflake {
  const config = loadConfig(env);
  if (config.podWorker)
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      'is "ordinal", which is leased, not trusted: use Snowflake.withLease() with workerMin and workerMax set to the pod\'s number',
    );
  if (config.workerId === undefined)
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      "is not set; set it to this process's worker id, or use Snowflake.withLease() to lease one from the database",
    );
  return new Snowflake({ ...options, layout: config.snowflake, workerId: config.workerId });
}
