import { once } from 'node:events';
import { type Server, createServer } from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { type Clock, systemClock } from '../clock';
import type { Config } from '../config/config';
import type { HttpServerSettings } from '../http/settings';
import type { OpsConfig } from '../ops/settings';
import type { SnowflakeRuntimeSettings } from '../worker/snowflake-lease';
import { type Logger, silentLogger } from '../logger';
import { instanceName } from '../ops';
import { buildDatabase, buildIncumbents, buildRedis, claimDeployment } from './connections';
import { checkPoolMemory, buildOps, buildOpsEvents, buildPools, buildStores, buildTakes } from './builders';
import { buildHttp } from './http';
import { buildSnowflake } from '../worker/snowflake-runtime';
import { buildGapless } from '../gapless/series';
import { buildRegistry } from '../entities/registry';
import { buildHighWater } from '../segment/high-water';
import { type ServiceParts, keepParts, seamsFor } from './internals';
import { Resources } from './resources';

/** In-flight requests' time to finish on stop (an id request takes ms): inside main.ts's 10 s, with room to close. */
const SHUTDOWN_GRACE_MS = 8000;

export interface ServiceOptions {
  clock?: Clock;
  log?: Logger;
  /** Prefix of every Redis key, over `config.redisKeyPrefix` (tests use their own). */
  redisPrefix?: string;
  /** This instance's name in its alarms and fleet heartbeat (default host:pid). */
  instance?: string;
  /** Worker lease and snowflake wait settings, over `config.lease`. */
  snowflake?: Partial<SnowflakeRuntimeSettings>;
  /** Metrics, forecasts, alarms and request logs, over `config.ops`. */
  ops?: Partial<OpsConfig>;
  /** How long `stop()` lets in-flight requests finish. */
  shutdownGraceMs?: number;
}

/** A running idpool service: what it is built of stays inside (`internals.ts`). */
export interface Service {
  /** Starts refilling and listens on `port` (0 = any); resolves to the port. */
  listen(port: number): Promise<number>;
  /** Stops accepting, finishes in-flight requests, stops refilling, closes connections. */
  stop(): Promise<void>;
}

/** The composition root, built in the order below: everything built closes in reverse order, also when start-up fails half way. */
export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const opsConfig: OpsConfig = { ...config.ops, ...options.ops };
  const resources = new Resources(log);
  // Shutting down (readiness, `Connection: close`), and where this instance listens (its heartbeat).
  const state = { stopping: false, address: `${hostname()}:-` };
  try {
    const db = resources.add('database', await buildDatabase(config, clock));
    const redis = resources.add('redis', await buildRedis(config));
    const incumbents = resources.add('incumbent databases', buildIncumbents(config));
    const prefix = options.redisPrefix ?? config.redisKeyPrefix;
    await claimDeployment(db, redis, prefix);
    const stores = buildStores({ config, db, redis, clock, prefix, log });
    const entities = resources.add('registry refresh', await buildRegistry({ config, stores, clock, log }));
    const registry = entities.registry;
    await checkPoolMemory(redis, registry, log);
    const base = { config, clock, log, db, stores, registry, incumbents };
    const snowflake = resources.add(
      'snowflake',
      await buildSnowflake({ ...base, holders: stores.workerHolders, settings: options.snowflake, redis }),
    );
    const instance = options.instance ?? instanceName();
    const address = () => state.address;
    const events = resources.add('alarms', buildOpsEvents({ ...base, opsConfig, redis, instance }));
    const highWater = await buildHighWater(config, db, log.child({ component: 'high-water' }));
    const pools = resources.add('refiller', buildPools({ ...base, ...seamsFor(options), ops: events, highWater }));
    const sampled = { opsConfig, redis, prefix, snowflake, instance, address, numbers: pools.numberUsage };
    const ops = resources.add('ops', buildOps({ ...base, ...sampled, events }));
    await pools.checkHighWater();
    const gapless = resources.add('gapless', buildGapless({ stores, highWater, log, clock }));
    const takes = buildTakes({ stores, pools, gapless, snowflake, ops });
    const web = { opsConfig, pools, takes, gapless, snowflake, ops, stopping: () => state.stopping };
    const { app, adminApp } = buildHttp({ ...base, ...web });
    const { refiller, fenceCheck } = pools;
    const { poolStore } = stores;
    const parts = { app, adminApp, db, redis, registry, snowflake, ops, poolStore, takes, refiller, fenceCheck };
    return runningService(parts, { config, options, resources, state, start: entities.start });
  } catch (err) {
    await resources.closeAll();
    throw err;
  }
}

function runningService(
  parts: ServiceParts,
  run: {
    config: Config;
    options: ServiceOptions;
    resources: Resources;
    state: { stopping: boolean; address: string };
    start(): void;
  },
): Service {
  const { app, adminApp, refiller, fenceCheck, ops } = parts;
  let server: Server | undefined;
  let adminServer: Server | undefined;
  const service: Service = {
    async listen(port) {
      refiller.start();
      fenceCheck.start();
      ops.start();
      run.start();
      // The admin port first: once the main port answers, so does the admin API.
      if (adminApp) adminServer = await listenOn(adminApp, run.config.adminPort ?? 0, run.config.http);
      server = await listenOn(app, port, run.config.http);
      const listening = (server.address() as AddressInfo).port;
      run.state.address = `${hostname()}:${listening}`;
      // The first heartbeat went out before the port was known: say where this instance is now.
      void ops.fleet.beat();
      return listening;
    },
    async stop() {
      run.state.stopping = true;
      const graceMs = run.options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS;
      const servers = [server, adminServer].filter((s) => s !== undefined);
      await Promise.all(servers.map((s) => closeGracefully(s, graceMs)));
      await run.resources.closeAll();
    },
  };
  keepParts(service, parts);
  return service;
}

/** Node checks the headers and request timeouts every 30 s by default: once a second holds a slow client to its limit. */
const TIMEOUT_CHECK_MS = 1000;

/** The HTTP server with the slow-client limits of `settings` (README "Security"). */
async function listenOn(app: Express, port: number, settings: HttpServerSettings): Promise<Server> {
  const server = createServer(
    {
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    },
    app,
  );
  server.maxConnections = settings.maxConnections;
  // Above the 60 s idle timeout of common load balancers, so they close first.
  server.keepAliveTimeout = 65_000;
  await once(server.listen(port), 'listening');
  return server;
}

/** Idle keep-alive connections close now, busy ones after their response (`Connection: close`) or the grace. */
async function closeGracefully(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const grace = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(grace);
}
