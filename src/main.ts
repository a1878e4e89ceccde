import 'dotenv/config';
import { ConfigError, loadConfig } from './config/config';
import { systemClock } from './clock';
import { createProcessLogger, maskUrl } from './logger';
import { type OpsConfig, loadOpsConfig } from './ops';
import { createService } from './service';

/** `npm start`: reads the environment, starts the service, stops cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  let ops: OpsConfig;
  try {
    config = loadConfig();
    ops = loadOpsConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`idpool: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Asynchronous, bounded, repeated warnings counted (src/logger.ts).
  const { log, flush, flushSync } = createProcessLogger(config.logLevel, systemClock);
  const exit = (code: number) => {
    flushSync();
    process.exit(code);
  };
  let service;
  try {
    service = await createService(config, { log, ops });
  } catch (err) {
    // Some settings (the snowflake layout) are only checked as a whole when built.
    if (err instanceof ConfigError) {
      process.stderr.write(`idpool: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`idpool: cannot start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const port = await service.listen(config.port);
  log.info({ port, database: service.db.description, pool: service.store.kind === 'redis' ? `redis ${maskUrl(config.redisUrl!)}` : 'in-process' }, 'idpool listening');
  flush(); // supervisors and tests wait for that line
  if (config.adminTokenGenerated) {
    process.stderr.write(`idpool: no IDPOOL_ADMIN_TOKEN set; generated admin token for this run: ${config.adminToken}\n`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    // Bounded: a stuck dependency must not keep the process alive forever.
    const force = setTimeout(() => {
      log.error({}, 'shutdown took longer than 10 s; exiting');
      exit(1);
    }, 10_000);
    force.unref();
    service
      .stop()
      .then(() => {
        log.info({ signal }, 'stopped');
        exit(0);
      })
      .catch((err) => {
        log.error({ err: String(err) }, 'error while stopping');
        exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();
