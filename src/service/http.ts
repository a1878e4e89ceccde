/** The HTTP face of a service: readiness over its dependencies, and the express app over the stores, pools and ops. */
import { type HttpDeps, type ReadinessReport, createHttpApp } from '../http/app';
import { AuthFailureLimiter } from '../http/auth';
import { within } from '../clock';
import { failedCheck, sharedCheck } from '../http/readiness';
import { type Ops, requestObserver } from '../ops';
import type { OpsConfig } from '../ops/settings';
import { SegmentLeaser } from '../segment/lease';
import type { Pools, ServiceBase } from './builders';
import type { ServiceParts } from './internals';
import type { SnowflakeRuntime } from '../worker/snowflake-runtime';
import type { TakeService } from '../take/take-service';
import type { GaplessSeries } from '../gapless/series';

/** Readiness: the database and the pool answer within a second, and the lease is held. */
function readinessCheck(deps: HttpParts): () => Promise<ReadinessReport> {
  const { db, snowflake, clock } = deps;
  const { poolStore } = deps.stores;
  return async () => {
    const checks: Record<string, string> = {};
    // Load balancers stop sending here first; the listener closes right after.
    if (deps.stopping()) return { ready: false, checks, reason: 'shutting down' };
    // A failure is kept as its kind only (failedCheck): /readyz is public, and drivers' messages name hosts.
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      try {
        const answered = fn().then(() => 'ok');
        checks[name] = await within(clock, answered, 1000, 'timed out');
      } catch (err) {
        checks[name] = failedCheck(err);
      }
    };
    await Promise.all([
      probe('database', () => db.query('SELECT 1')),
      probe(poolStore.kind === 'redis' ? 'redis' : 'pool', () => poolStore.ping()),
      ...[...deps.incumbents.values()].map((incumbent) => probe(`${incumbent.kind}_database`, () => incumbent.ping())),
    ]);
    checks.lease = snowflake.leaseCheck();
    // An incumbent's database is reported, never a reason to leave rotation: every instance shares it, so a 503
    // here would take the whole fleet out.
    const incumbentChecks = new Set([...deps.incumbents.values()].map((incumbent) => `${incumbent.kind}_database`));
    const failed = Object.entries(checks).filter(([, v]) => v !== 'ok');
    const degraded = failed.filter(([name]) => incumbentChecks.has(name)).map(([name]) => name);
    const shared = ['database', ...(poolStore.kind === 'redis' ? ['redis'] : []), ...incumbentChecks];
    // A lease lost while the database or Redis fails is lost on every instance alike; alone, it is this one's.
    if (failed.some(([name]) => shared.includes(name))) shared.push('lease');
    return {
      ready: failed.every(([name]) => incumbentChecks.has(name)),
      checks,
      ...(degraded.length ? { degraded } : {}),
      shared,
      sampling: deps.ops.sampler.health(),
    };
  };
}

type HttpParts = ServiceBase & {
  opsConfig: OpsConfig;
  pools: Pools;
  takes: TakeService;
  gapless: GaplessSeries;
  snowflake: SnowflakeRuntime;
  ops: Ops;
  /** True once shutdown began: readiness fails and answers close their connections. */
  stopping: () => boolean;
};

/** What probes, scrapers and the dashboard read. */
function operations(deps: HttpParts): HttpDeps['operations'] {
  const { ops } = deps;
  const readiness = readinessCheck(deps);
  // A scrape flood (open /metrics) costs at most one database and Redis probe a second, as /readyz does.
  const dependencyProbe = sharedCheck(readiness, deps.clock, 1000);
  return {
    readiness,
    metrics: async () => {
      ops.metrics.recordDependencies((await dependencyProbe()).checks);
      return ops.metrics.render();
    },
    overview: (query) => ops.overview(query),
    instances: () => ops.instances(),
    workers: () => deps.snowflake.workers.list(),
  };
}

/** The app of the main port, and the admin port's when IDPOOL_ADMIN_PORT is set. */
export function buildHttp(deps: HttpParts): Pick<ServiceParts, 'app' | 'adminApp'> {
  const { stores, ops, log } = deps;
  const httpDeps: HttpDeps = {
    registry: deps.registry,
    takes: deps.takes,
    idempotency: stores.idempotency,
    snowflake: deps.snowflake.decoder,
    leases: new SegmentLeaser({
      allocator: deps.pools.allocator,
      stride: stores.stride,
      rate: stores.snowflakeRate,
      events: ops.leaseEvents,
    }),
    lines: {
      pools: stores.poolStore,
      offsets: stores.allocator,
      demand: stores.demand,
      raise: (entityKey, atLeast) => deps.pools.refiller.raise(entityKey, atLeast),
    },
    numbers: {
      raise: (entity, periodId, seq) => deps.pools.numbers.raise(entity, periodId, seq),
      usage: (entity) => deps.pools.numberUsage.usage(entity),
      view: (key) => ops.sampler.numberView(key),
      gapless: deps.gapless,
    },
    operations: operations(deps),
    // The request line is built from the method, route, path, status and time only: nothing to redact.
    observe: requestObserver({
      log: log.child({ component: 'http' }, { redact: [] }),
      mode: deps.opsConfig.requestLog,
      slowMs: deps.opsConfig.requestLogSlowMs,
      duration: ops.metrics.httpDuration,
      now: () => deps.clock.monotonic(),
    }),
    draining: deps.stopping,
    tokens: { admin: deps.config.adminToken, ops: deps.config.opsToken, metrics: deps.config.metricsToken },
    authFailures: new AuthFailureLimiter(deps.clock),
    compat: deps.config.compat,
    clock: deps.clock,
    log: log.child({ component: 'http' }),
  };
  // One set of dependencies for both ports: the failed-authentication limit counts a client's tries on either.
  if (deps.config.adminPort === undefined) return { app: createHttpApp(httpDeps), adminApp: undefined };
  return { app: createHttpApp(httpDeps, 'public'), adminApp: createHttpApp(httpDeps, 'admin') };
}
