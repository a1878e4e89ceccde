import { z } from 'zod';
import {
  COMPAT_PROTOCOLS,
  KEY_PATTERN,
  LIMITS,
  addSecretSchema,
  holdSchema,
  registerSchema,
  raisePeriodSchema,
  raiseSchema,
  rotateSchema,
  updateSchema,
} from '../../entities/entity';
import { MAX_SECRETS } from '../../entities/secrets';
import { RESETS } from '../../numbers/period';
import { MAX_LEASE_SIZE } from '../../segment/lease';
import { PAGE_MAX } from '../params';

// The API's bodies: requests are the schemas the routes validate with, responses type what they answer (`Answer`);
// both become `components.schemas`. The parameters exported here are what the routes check and paths.ts states.

/** Without a maximum, zod's own (2^53 − 1), which the document leaves out as it does z.int()'s. */
const int = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) => z.int().min(minimum).max(maximum);
const text = z.string();
const isoDate = z.string().meta({ format: 'date-time' });
const unixMs = z.int().min(0).describe('Unix time in milliseconds.');
/** Rates, percentages, ages. */
const atLeast0 = z.number().min(0);
const digits = z.string().regex(/^[0-9]+$/);
/** Ids are below 2^63: at most 19 digits. */
const decimalId = digits
  .min(1)
  .max(19)
  .describe('A 64-bit id as a decimal string (JSON numbers lose precision above 2^53).');
export const entityKey = z.string().min(1).max(64).regex(KEY_PATTERN).describe('Entity key: 1-64 of A-Z a-z 0-9 _ - .');
/** `:secretId` of `DELETE /admin/apps/:key/secrets/:secretId`: the id the entity view lists. */
export const secretId = z.string().regex(/^[A-Za-z0-9]{1,32}$/);
const keyCharacters = /^[A-Za-z0-9_.-]*$/;
const printableAscii = /^[\x20-\x7e]+$/;
/** `?q=` of `GET /admin/ops`: part of an entity key. */
export const opsSearch = z.string().max(64).regex(keyCharacters);
export const idempotencyKey = z.string().min(1).max(128).regex(printableAscii);
/** A secret: 32 random bytes, base64url. */
const secret = z
  .string()
  .length(43)
  .regex(/^[A-Za-z0-9_-]+$/);
/** A business number as issued (`INV20261128-000123`). */
const businessNumber = z
  .string()
  .regex(/^[A-Za-z0-9_./-]+$/)
  .min(1)
  .max(200);

/** A gapless series' ledger (docs/numbers.md "Gapless series"). */
const seq = digits.max(19);
const seqRange = z.object({ from: seq, to: seq });
const LedgerEntry = z.object({
  number: text,
  period: text,
  seq,
  issuedAt: isoDate.describe("By the database's clock."),
  reference: text.nullable(),
  status: z.enum(['issued', 'void', 'lost']),
  reason: text.nullable().describe('Why it was voided, or entered lost.'),
});

/** Now's period of a business-number entity (docs/numbers.md, "Capacity and alarms"). */
const NumberPeriod = z.object({
  id: text.describe("The period's name (`20261128`; `all` for `never`)."),
  start: isoDate,
  end: isoDate.nullable().describe("The next period's start; null for `never`."),
  startLocal: text.describe("`start` as the period's zone reads it, labelled: `2026-11-29 00:00 (Asia/Shanghai)`."),
  endLocal: text.nullable().describe('`end` likewise; null for `never`.'),
  timeZone: text,
  used: decimalId.describe(
    "Numbers of the period handed out or dropped as gaps; of a gapless series, its ledger's counter: issued, voided or entered lost.",
  ),
  capacity: decimalId.describe('10^N − 1 for `{seq:N}`.'),
  digits: int(1, 18),
  usedPercent: atLeast0,
  ready: int(0),
  takePerSecond: atLeast0.describe(
    'Over IDPOOL_OPS_PERIOD_RATE_WINDOW_MS (15 min) of this period; 0 before it is sampled.',
  ),
  runsOutAt: isoDate.nullable().describe('At that rate; null when nothing is taken.'),
  runsOutLocal: text.nullable().describe("The same in the period's zone: `14:20`, with the date when not today there."),
  runsOutBeforeEnd: z.boolean().describe('The `forecast_period_exhausted` alarm holds.'),
});

/** The Leaf or Tinyid row an entity was imported from. */
const Incumbent = z.object({
  kind: z.enum(['leaf', 'tinyid']),
  key: text,
  live: z.boolean().describe("Segments reserved from the incumbent's row (a live cutover)."),
});

/** What a segment entity shows and a snowflake entity does not (entities/entity.ts describeEntity). */
const SEGMENT_ONLY = [
  'startOffset',
  'step',
  'minSizePercent',
  'maxPoolSize',
  'interval',
  'delta',
  'remainder',
  'currentOffset',
  'pool',
] as const;

/** An entity as the admin API shows it; segment fields are optional here, and the document says which mode has them. */
const entityFields = {
  key: entityKey,
  name: z.string().max(128),
  mode: z.enum(['monotonic', 'trend', 'snowflake']),
  startOffset: decimalId.optional(),
  step: int(1, LIMITS.step).optional(),
  maxSizePerTimes: int(1, LIMITS.maxSizePerTimes),
  maxSizePerSecond: int(0, LIMITS.maxSizePerSecond).describe('0 = unlimited.'),
  minSizePercent: int(1, 99).optional(),
  maxPoolSize: int(1, LIMITS.maxPoolSize).optional(),
  interval: int(0).optional().describe('Least ms between two refill checks of this entity (default: the refill tick).'),
  delta: int(1, LIMITS.delta).optional().describe('Ids are the numbers ≡ remainder (mod delta); 1 for every number.'),
  remainder: int(0, LIMITS.delta - 1).optional(),
  format: z.string().max(64).optional().describe('Business-number template (docs/numbers.md).'),
  reset: z.enum(RESETS).optional(),
  timeZone: text.optional().describe('IANA name or fixed offset of the periods.'),
  gapless: z.boolean().optional().describe('A gapless series: each number issued at the take, in the ledger.'),
  compat: z
    .array(z.enum(COMPAT_PROTOCOLS))
    .describe('Protocols that serve this entity without its secret (`leaf`: Leaf routes when IDPOOL_COMPAT has it).'),
  secrets: z
    .array(z.object({ id: text, createTime: isoDate, expiresAt: isoDate.nullable() }))
    .max(MAX_SECRETS)
    .describe('The secrets it accepts, newest first (never the secrets or their hashes).'),
  createTime: isoDate,
  updateTime: isoDate,
  held: text.nullable().optional().describe('Why it serves no ids until released (503 `entity_held`); null: served.'),
  incumbent: Incumbent.nullable()
    .optional()
    .describe('The Leaf or Tinyid row it was imported from (docs/migrating.md); null: registered natively.'),
  alias: z
    .string()
    .max(190)
    .nullable()
    .optional()
    .describe(
      "The incumbent's tag when it does not fit idpool's keys (`order:v2`, imported with `--key`): Leaf's and Tinyid's routes answer it as the key; null otherwise.",
    ),
  currentOffset: decimalId
    .nullable()
    .optional()
    .describe('Next unreserved number of the line (segment entities; not a business-number one).'),
  pool: z
    .object({ size: int(0), target: int(1), max: int(1), lowWatermark: int(0) })
    .optional()
    .describe(
      "Segment entities only; a business-number entity's is its period's ready numbers against their cap (docs/numbers.md).",
    ),
  period: NumberPeriod.optional(),
};
/** A snowflake entity has no pool, so none of its fields (it refuses them on input); a segment entity has all. */
const byMode = {
  if: { properties: { mode: { const: 'snowflake' } } },
  then: { not: { anyOf: SEGMENT_ONLY.map((field) => ({ required: [field] })) } },
  // A business-number entity (`format`) draws from its period's sequence, not the line: no `currentOffset`.
  else: {
    required: SEGMENT_ONLY.filter((field) => field !== 'currentOffset'),
    if: { required: ['format'] },
    then: { not: { required: ['currentOffset'] } },
    else: { required: ['currentOffset'] },
  },
};
const Entity = z.object(entityFields).meta(byMode);

const Worker = z
  .looseObject({
    workerId: int(0),
    code: text.nullable().describe('The instance holding or last holding the lease.'),
    leaseVersion: int(0).optional().describe('Bumped by every acquisition.'),
    heartbeatAt: isoDate.nullable(),
    lastTimestamp: isoDate
      .nullable()
      .describe('Time up to which the holder may have made ids; the next holder starts after it.'),
    live: z.boolean(),
    self: z.boolean().optional().describe('The answering instance holds this lease.'),
  })
  .describe('One worker id lease; further fields may be present.');

const Sampling = z
  .object({
    ok: z.boolean().describe('Every segment entity sampled within two rounds.'),
    oldestSampleAgeSeconds: atLeast0,
    roundSeconds: atLeast0.describe('Seconds one round over every entity takes (1,000 entities a sampling run).'),
    staleEntities: int(0),
  })
  .describe(
    'How current the ops sampler (dashboard rows, pool gauges, pool alarms) is. Informational: it does not change readiness.',
  );

/** One alarm of the overview's recent list. */
const Alarm = z.looseObject({
  name: text,
  severity: z.enum(['warning', 'critical']),
  entityKey: entityKey.optional(),
  message: text,
  details: z.record(z.string(), z.unknown()).optional(),
  at: isoDate,
  status: z.enum(['firing', 'resolved']),
  notified: z.boolean(),
  instance: text.optional().describe('The instance that raised it (host:pid).'),
});

/** One instance of the fleet, from its heartbeat (`GET /admin/instances`). */
const Instance = z.object({
  id: text.describe('host:pid, the name its alarms carry.'),
  address: text.describe('host:port it listens on.'),
  version: text.describe('idpool version.'),
  node: text.describe('Node.js version.'),
  startedAt: isoDate,
  workerId: int(0).nullable().describe('The snowflake worker id it holds; null when none is held.'),
  epoch: text.nullable().describe('The Redis epoch (run_id:master_replid) its connection sees.'),
  dialect: text.describe('mysql, postgres or sqlite.'),
  library: text
    .nullable()
    .optional()
    .describe(
      'The Redis function library it calls (idpool_<hash>); null without Redis; absent from releases before versioned libraries.',
    ),
  clockSkewMs: z
    .record(z.string(), z.number().nullable())
    .optional()
    .describe(
      "Its clock minus Redis's (redis) and the database's (database), in ms, as it last checked; null when not read. Absent from older releases.",
    ),
  lastSampleAt: isoDate.nullable(),
  activeAlarms: int(0).describe('Alarm conditions on at that instance.'),
  ttlMs: int(1).describe('Gone when its heartbeat is older than this.'),
  state: z.enum(['alive', 'gone']).describe('gone: no heartbeat within its TTL (listed for 30 TTLs, then dropped).'),
  heartbeatAt: isoDate,
  heartbeatAgeSeconds: atLeast0,
  self: z.boolean().describe('The instance answering.'),
  disagrees: z.array(z.enum(['epoch', 'version'])).describe('What it differs from most alive instances on.'),
});

/** `GET /admin/instances`: the fleet as the answering instance sees it. */
const Instances = z.object({
  at: isoDate,
  source: z
    .enum(['redis', 'local'])
    .describe(
      "redis: every instance's heartbeat; local: this instance only (embedded, or Redis did not answer: `note`).",
    ),
  note: text.optional(),
  alive: int(0),
  gone: int(0),
  disagreement: z.object({ epoch: z.boolean(), version: z.boolean() }),
  instances: z.array(Instance).describe('Alive first, then gone; by id.'),
});

const seconds = z.number().nullable();
/** One segment entity of the overview: its pool, rates, forecasts and recent history. */
const EntityOverview = z.object({
  key: entityKey,
  mode: z.enum(['monotonic', 'trend']),
  pool: z.object({
    size: int(0),
    target: int(0),
    max: int(0),
    lowWatermark: int(0),
    fillPercent: z
      .number()
      .meta({ format: 'double' })
      .describe('size against target (what a refill tops up to), not max; above 100 while demand falls'),
  }),
  currentOffset: decimalId,
  highestId: decimalId.nullable(),
  takePerSecond: atLeast0,
  reservePerSecond: atLeast0,
  forecast: z
    .object({ poolDrySeconds: seconds, jsSafeLimitSeconds: seconds, int63LimitSeconds: seconds })
    .describe('Seconds; null = never at the current rate.'),
  history: z.array(z.object({ t: unixMs, size: int(0), takePerSecond: atLeast0.meta({ format: 'double' }) })),
  sampledAt: unixMs.nullable().describe('Unix ms of the last sample; null before the first.'),
  stale: z
    .boolean()
    .describe('Not sampled within two sampling rounds: the values are the last ones read, not current.'),
  period: NumberPeriod.optional(),
  gapless: z
    .literal(true)
    .optional()
    .describe("A gapless series (docs/numbers.md): its period's used is what its ledger issued; it keeps no pool."),
});

/** One snowflake entity of the overview: it has no pool, only a take rate. */
const SnowflakeEntityOverview = z.object({
  key: entityKey,
  mode: z.enum(['snowflake']),
  takePerSecond: atLeast0.describe(
    'Ids per second served by the answering instance (each instance makes its own snowflake ids).',
  ),
});

const scope = z.enum(['fleet', 'instance']);

/** Every named body, in the order the document lists them: requests are read as input, responses as output. */
export const REQUESTS = {
  TakeRequest: z.strictObject({
    count: int(1, LIMITS.maxSizePerTimes).optional().describe('At most the entity maxSizePerTimes. Default: 1.'),
    reference: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe(
        "A gapless series only: the caller's reference (an invoice's id), kept in the ledger beside each number.",
      ),
  }),
  LeaseRequest: z.strictObject({
    size: int(1, MAX_LEASE_SIZE)
      .optional()
      .describe("How many ids. Default: the entity's step. At most the entity's maxSizePerSecond when that is not 0."),
  }),
  RegisterRequest: registerSchema,
  UpdateRequest: updateSchema,
  RotateRequest: rotateSchema,
  RaiseRequest: raiseSchema,
  RaisePeriodRequest: raisePeriodSchema,
  AddSecretRequest: addSecretSchema,
  HoldRequest: holdSchema,
  VoidRequest: z.strictObject({ reason: z.string().min(1).max(255) }),
  ReconcileRequest: z.strictObject({
    period: text.optional().describe("Default: now's period by the database's clock."),
  }),
};
export const RESPONSES = {
  Error: z.object({
    error: z.object({
      code: z.enum([
        'invalid_request',
        'unauthorized',
        'forbidden',
        'not_found',
        'conflict',
        'payload_too_large',
        'unsupported_media_type',
        'rate_limited',
        'pool_exhausted',
        'period_exhausted',
        'period_short',
        'gapless_not_served_here',
        'gapless_ledger_behind',
        'entity_held',
        'clock_skew',
        'unavailable',
        'internal',
      ]),
      message: text,
    }),
  }),
  Ids: z.object({
    ids: z
      .array(z.union([decimalId, businessNumber]))
      .min(1)
      .describe('Decimal ids; business numbers for an entity with a `format` (docs/numbers.md).'),
  }),
  LeasedSegment: z
    .object({
      first: decimalId,
      last: decimalId,
      count: int(1, MAX_LEASE_SIZE).describe('How many ids: (last − first) / delta + 1.'),
      delta: int(1).describe('Distance between consecutive ids (the deployment stride count).'),
      remainder: int(0).describe('id mod delta of every id.'),
    })
    .describe(
      'The ids first, first + delta, …, last, each ≡ remainder (mod delta): reserved for this client alone, which hands them out itself.',
    ),
  DecodedNumber: z
    .object({
      number: businessNumber,
      period: z.string().regex(/^([0-9]{4,10}|all)$/),
      reset: z.enum(RESETS),
      timeZone: text,
      start: isoDate.describe('First instant of the period.'),
      end: isoDate.nullable().describe('First instant after it; null for reset never.'),
      date: text.nullable().describe('The period date in its zone.'),
      seq: decimalId,
    })
    .describe('A business number taken apart: its period in the entity zone and its sequence.'),
  DecodedId: z
    .looseObject({
      id: decimalId,
      timestamp: isoDate.describe('Start of the time unit the id was made in.'),
      timestampMs: unixMs,
      region: int(0)
        .optional()
        .describe('The region that made it (IDPOOL_REGION); present when the layout has region bits.'),
      worker: int(0),
      timeBack: int(0, 1),
      sequence: int(0),
      reserved: int(0),
    })
    .describe('The parts of a snowflake id; further explanatory fields may be present.'),
  Entity,
  RegisteredEntity: z
    .object({
      ...entityFields,
      secret: secret.describe('Shown once; send as `Authorization: Bearer <secret>`.'),
    })
    .meta(byMode),
  EntityPage: z.object({
    apps: z.array(Entity).max(PAGE_MAX),
    next: entityKey.nullable().describe('Key to pass as `after` for the next page; null on the last page.'),
  }),
  Secret: z.object({ secret }),
  RaisedPeriod: z.object({ key: entityKey, period: text, seq: decimalId }),
  AddedSecret: z.object({
    id: text,
    added: z.boolean().describe('False when the entity already accepted this secret.'),
    secret: secret.optional().describe('Only when made here: shown once.'),
    expiresAt: isoDate.nullable(),
  }),
  LiveCutovers: z.object({
    apps: z.array(
      z.object({
        key: text,
        incumbent: Incumbent,
        delta: z.int(),
        remainder: z.int(),
        currentOffset: text,
        reservedFromIncumbent: text,
      }),
    ),
  }),
  Worker,
  WorkerList: z.object({ workers: z.array(Worker) }),
  Health: z.object({ status: z.literal('ok') }),
  Readiness: z.object({
    status: z.enum(['ready', 'not_ready']),
    reason: text.optional().describe('Why not ready (present on 503).'),
    degraded: z
      .array(text)
      .optional()
      .describe(
        "Failed checks that leave the instance ready: a live cutover's incumbent database (its live entities answer 503; the rest serve).",
      ),
    checks: z.record(z.string(), text).describe('"ok" or what failed, per dependency.'),
    sampling: Sampling.optional(),
  }),
  Sampling,
  Alarm,
  EntityOverview,
  NumberPeriod,
  SnowflakeEntityOverview,
  /** `GET /admin/ops`: what the dashboard shows. */
  OpsOverview: z.object({
    at: isoDate,
    entityCount: int(0).describe('Live entities in all.'),
    matching: int(0).describe(
      'Entities whose key contains `q` (all without it); `entities` lists the busiest of them.',
    ),
    entities: z
      .array(z.union([EntityOverview, SnowflakeEntityOverview]))
      .describe('Busiest first (take rate), then by key.'),
    snowflake: z
      .object({
        timeExhaustedAt: isoDate.nullable(),
        jsSafeLimitAt: isoDate.nullable(),
        region: int(0).optional().describe('IDPOOL_REGION, when the layout has region bits.'),
      })
      .describe('null dates: past the last date JavaScript can show (year 275760), i.e. never.')
      .nullable(),
    sampling: Sampling,
    workers: z.array(Worker).describe('Live worker leases only.'),
    alarms: z
      .object({
        scope,
        note: text.optional(),
        instance: text.describe('The instance answering (host:pid).'),
        active: int(0).describe('Alarm conditions on now, over the alive instances (scope fleet).'),
        recent: z.array(Alarm).describe('Newest first.'),
      })
      .describe(
        "fleet: every instance's recent alarms (from Redis), each naming its instance; instance: this instance's own (embedded mode, or Redis did not answer, which `note` says).",
      ),
    rates: z
      .object({ scope, instances: int(1), note: text.optional() })
      .describe(
        "Whose take rates `entities` shows: fleet = summed over the alive instances; instance = this instance's (the fleet could not be read: `note`). Per-instance figures are in each instance's /metrics.",
      ),
    instances: Instances,
  }),
  Instance,
  Instances,
  LedgerEntry,
  LedgerPage: z.object({
    key: entityKey,
    period: text,
    numbers: z.array(LedgerEntry).max(PAGE_MAX),
    next: seq.nullable().describe('The `after` of the next page; null on the last.'),
  }),
  LedgerAudit: z.object({
    key: entityKey,
    period: text,
    first: seq.nullable(),
    last: seq.nullable(),
    counter: seq,
    issued: int(0),
    voided: int(0),
    lost: int(0),
    holes: z.array(seqRange).describe('Sequences up to the counter with no ledger row: always empty.'),
    duplicates: z.array(text).describe('Numbers written twice: always empty.'),
  }),
  Reconciled: z.object({
    key: entityKey,
    period: text,
    record: z.enum(['redis', 'high-water file', 'none']),
    lost: seqRange
      .extend({
        count: z.int().describe('How many were entered: fewer than the range holds when rows inside it were kept.'),
      })
      .optional()
      .describe('The first and last sequence entered lost; absent when the ledger held every one.'),
  }),
};
export type BodyName = keyof typeof REQUESTS | keyof typeof RESPONSES;
/** What a route answers with the named body. */
export type Answer<Name extends keyof typeof RESPONSES> = z.output<(typeof RESPONSES)[Name]>;
