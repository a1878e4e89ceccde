// First: on an unsupported Node this exits before anything else (better-sqlite3) loads.
import './node-version';
import './compile-cache';
import 'dotenv/config';
import { systemClock } from './clock';
import { type Config, ConfigError, loadConfig } from './config/config';
import { type Logger, createProcessLogger, maskUrls } from './logger';
import type { Service } from './service';
import { errorMessage } from './errors';
import { sqliteFile } from './db/database-url';
import { adminTokenFileBeside, keptAdminToken } from './http/admin-token-file';

/** `npm start` and `idpool serve`: the environment (`overrides` win), the service, a clean stop on SIGTERM/SIGINT. */
export async function main(overrides: { port?: number } = {}): Promise<void> {
  // A failure to start ends the process rather than being logged while nothing listens. A configuration error
  // (some, like the snowflake layout, found only as the service is built) exits 2 (usage, as the CLI's).
  await run(overrides).catch((err: unknown) => {
    const invalid = err instanceof ConfigError;
    process.stderr.write(
      `idpool: ${invalid ? 'invalid configuration' : 'cannot start'}: ${maskUrls(errorMessage(err))}\n`,
    );
    process.exit(invalid ? 2 : 1);
  });
}

async function run(overrides: { port?: number }): Promise<void> {
  const config = { ...loadConfig(), ...(overrides.port === undefined ? {} : { port: overrides.port }) };
  const adminTokenFile = await keepAdminToken(config);
  const { log, flush, flushBeforeExit } = createProcessLogger(config.logLevel, systemClock);
  let exiting = false;
  /** Exits with `code` once the log is written; `last` logs the last line, after the held-back counts. */
  const exit = (code: number, last?: () => void) => {
    if (exiting) return;
    exiting = true;
    void flushBeforeExit(1000, last).finally(() => process.exit(code));
  };
  survivePromiseFaults(log, exit);
  // Loaded once the configuration is valid: a bad one costs ~0.15 s of CPU, not the service's ~0.5 s.
  const [{ describeRedis }, { serviceParts }, { createService }] = await Promise.all([
    import('./redis/connection'),
    import('./service/internals'),
    import('./service'),
  ]);
  const service = await createService(config, { log });
  const port = await service.listen(config.port);
  log.info(
    {
      port,
      ...(config.adminPort === undefined ? {} : { adminPort: config.adminPort }),
      database: serviceParts(service).db.description,
      pool: config.redis ? describeRedis(config.redis) : 'in-process',
      ...(adminTokenFile ? { adminTokenFile } : {}),
    },
    'idpool listening',
  );
  flush(); // supervisors and tests wait for that line
  if (adminTokenFile) {
    // Where it is, never the token itself: stderr is often a shared log.
    process.stderr.write(
      `idpool: no IDPOOL_ADMIN_TOKEN set; the admin token is kept in ${adminTokenFile} (readable by its owner only): export IDPOOL_ADMIN_TOKEN=$(cat ${adminTokenFile})\n`,
    );
  } else if (config.adminTokenGenerated) {
    process.stderr.write(
      `idpool: no IDPOOL_ADMIN_TOKEN set; generated admin token for this run: ${config.adminToken}\n`,
    );
  }
  stopOnSignals(service, log, exit);
}

/** With no IDPOOL_ADMIN_TOKEN on a SQLite file, the token kept beside it replaces the generated one; its path. */
async function keepAdminToken(config: Config): Promise<string | undefined> {
  const sqlite = config.adminTokenGenerated ? sqliteFile(config.databaseUrl) : undefined;
  if (sqlite === undefined) return undefined;
  const path = adminTokenFileBeside(sqlite);
  config.adminToken = await keptAdminToken(path, config.adminToken);
  return path;
}

/**
 * Invariant 7: no dependency fault ends the process; a promise that slips through unhandled is an alarm, not a
 * crash. An uncaught exception still exits: thrown out of a callback midway, it leaves state unknown.
 */
function survivePromiseFaults(log: Logger, exit: (code: number) => void): void {
  process.on('unhandledRejection', (reason) => {
    log.error(
      {
        alarm: 'unhandled_rejection',
        err: reason instanceof Error ? (reason.stack ?? String(reason)) : String(reason),
      },
      'unhandled promise rejection (a bug); the process keeps running',
    );
  });
  process.on('uncaughtException', (err) => {
    log.error({ alarm: 'uncaught_exception', err: err.stack ?? String(err) }, 'uncaught exception; exiting');
    exit(1);
  });
}

/** Stops the service on the first SIGTERM or SIGINT, within a bounded time, and exits 0 when it stopped cleanly. */
function stopOnSignals(service: Service, log: Logger, exit: (code: number, last: () => void) => void): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    // Bounded: a stuck dependency must not keep the process alive forever.
    const force = setTimeout(() => exit(1, () => log.error({}, 'shutdown took longer than 10 s; exiting')), 10_000);
    force.unref();
    service
      .stop()
      // The last line, after the counts of repeated lines held back (a supervisor reads it as the end).
      .then(() => exit(0, () => log.info({ signal }, 'stopped')))
      .catch((err: unknown) => exit(1, () => log.error({ err: String(err) }, 'error while stopping')));
  };
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => stop(signal));
}

// Run as `npm start`; `idpool serve` imports main() and calls it.
if (require.main === module) void main();
