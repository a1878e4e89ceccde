/** What a running service is built of, and the seams tests run it with: in this package only, off the public surface. */
import type { Express } from 'express';
import type { Database } from '../db/database';
import type { EntityRegistry } from '../entities/registry';
import type { Ops } from '../ops';
import type { FenceCheck } from '../pool/fence-check';
import type { PoolStore } from '../pool/pool-store';
import type { Refiller } from '../pool/refiller';
import type { RedisClient } from '../redis/connection';
import type { Segment } from '../segment/allocator';
import type { TakeService } from '../take/take-service';
import type { SnowflakeRuntime } from '../worker/snowflake-runtime';

/** A running service's parts (main.ts's start-up line, tests). */
export interface ServiceParts {
  readonly app: Express;
  /** The admin port's app (IDPOOL_ADMIN_PORT): `/admin/*` alone, which `app` then answers 404. */
  readonly adminApp: Express | undefined;
  readonly db: Database;
  readonly redis: RedisClient | undefined;
  readonly poolStore: PoolStore;
  readonly registry: EntityRegistry;
  readonly refiller: Refiller;
  /** Carries entities whose database went back past their fences (`stats` counts its runs). */
  readonly fenceCheck: FenceCheck;
  /** The one take of every face: `take(entity, count)`, coalesced per entity and turn. */
  readonly takes: TakeService;
  readonly snowflake: SnowflakeRuntime;
  readonly ops: Ops;
}

/** Hooks into a service's work that only tests set. */
export interface ServiceSeams {
  /** Runs between reserving a segment and pushing it. */
  beforePush?: (entityKey: string, segment: Segment) => Promise<void>;
}

// Keyed by object, not by `Service` and `ServiceOptions`: `index.ts` imports this file.
const partsOf = new WeakMap<object, ServiceParts>();
const seamsOf = new WeakMap<object, ServiceSeams>();

export function keepParts(service: object, parts: ServiceParts): void {
  partsOf.set(service, parts);
}

export function serviceParts(service: object): ServiceParts {
  const parts = partsOf.get(service);
  if (!parts) throw new Error('not a service made by createService');
  return parts;
}

/** `options` with test seams: `createService(config, withSeams({ ... }, { beforePush }))`. */
export function withSeams<O extends object>(options: O, seams: ServiceSeams): O {
  seamsOf.set(options, seams);
  return options;
}

export function seamsFor(options: object): ServiceSeams {
  return seamsOf.get(options) ?? {};
}
