import { type Config, loadConfig } from '../../src/config/config';
import { ADMIN_TOKEN } from './http';

/**
 * The config of a service a test runs in its own process: `env` (its
 * database, its Redis, what the test tunes) over the admin token and the
 * fixed worker id 1 that every such test uses.
 */
export function inProcessConfig(env: Record<string, string>): Config {
  return loadConfig({ IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN, IDPOOL_WORKER_ID: '1', IDPOOL_WORKER_ID_UNSAFE: '1', ...env });
}
