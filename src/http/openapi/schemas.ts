/**
 * The OpenAPI schemas, declared from the same limits and zod schemas the
 * routes validate with: long by nature (one declarative entry per body).
 */
import {
  COMPAT_PROTOCOLS,
  LIMITS,
  addSecretSchema,
  registerSchema,
  raisePeriodSchema,
  raiseSchema,
  rotateSchema,
  updateSchema,
} from '../../entities/entity';
import { MAX_SECRETS } from '../../entities/secrets';
import { RESETS } from '../../numbers/period';
import { MAX_LEASE_SIZE } from '../../segment/lease';
import {
  type Schema,
  decimalId,
  entityKey,
  fromZod,
  int32,
  isoDate,
  nullableNumber,
  ref,
  secret,
  unixMs,
} from './parts';

/** A business number as issued (`INV20261128-000123`). */
const businessNumber = { type: 'string', pattern: '^[A-Za-z0-9_./-]+$', minLength: 1, maxLength: 200 };

// The document's named schemas (`components.schemas`), one function per
// part of the API they describe.

/** Every named schema, in the order the document lists them. */
export function componentSchemas(): Record<string, Schema> {
  return {
    ...idSchemas(),
    ...entitySchemas(),
    ...workerAndProbeSchemas(),
    Alarm: alarmSchema(),
    EntityOverview: entityOverviewSchema(),
    NumberPeriod: numberPeriodSchema(),
    SnowflakeEntityOverview: snowflakeEntityOverviewSchema(),
    OpsOverview: opsOverviewSchema(),
    Instance: instanceSchema(),
    Instances: instancesSchema(),
  };
}

/** The error body every route shares, and the bodies of the client API (take ids, explain one). */
function idSchemas(): Record<string, Schema> {
  return {
    Error: {
      type: 'object',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: {
            code: {
              type: 'string',
              enum: [
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
                'unavailable',
                'internal',
              ],
            },
            message: { type: 'string' },
          },
        },
      },
    },
    TakeRequest: {
      type: 'object',
      additionalProperties: false,
      properties: {
        count: int32(1, LIMITS.maxSizePerTimes, 'At most the entity maxSizePerTimes. Default: 1.'),
        reference: {
          type: 'string',
          minLength: 1,
          maxLength: 128,
          description:
            "A gapless series only: the caller's reference (an invoice's id), kept in the ledger beside each number.",
        },
      },
    },
    Ids: {
      type: 'object',
      required: ['ids'],
      additionalProperties: false,
      properties: {
        ids: {
          type: 'array',
          minItems: 1,
          items: { anyOf: [decimalId, businessNumber] },
          description: 'Decimal ids; business numbers for an entity with a `format` (docs/numbers.md).',
        },
      },
    },
    LeaseRequest: {
      type: 'object',
      additionalProperties: false,
      properties: {
        size: int32(
          1,
          MAX_LEASE_SIZE,
          "How many ids. Default: the entity's step. At most the entity's maxSizePerSecond when that is not 0.",
        ),
      },
    },
    LeasedSegment: {
      type: 'object',
      required: ['first', 'last', 'count', 'delta', 'remainder'],
      additionalProperties: false,
      description:
        'The ids first, first + delta, …, last, each ≡ remainder (mod delta): reserved for this client alone, which hands them out itself.',
      properties: {
        first: decimalId,
        last: decimalId,
        count: int32(1, MAX_LEASE_SIZE, 'How many ids: (last − first) / delta + 1.'),
        delta: int32(1, undefined, 'Distance between consecutive ids (the deployment stride count).'),
        remainder: int32(0, undefined, 'id mod delta of every id.'),
      },
    },
    DecodedNumber: {
      type: 'object',
      required: ['number', 'period', 'reset', 'timeZone', 'start', 'end', 'date', 'seq'],
      additionalProperties: false,
      description: 'A business number taken apart: its period in the entity zone and its sequence.',
      properties: {
        number: businessNumber,
        period: { type: 'string', pattern: '^([0-9]{4,10}|all)$' },
        reset: { type: 'string', enum: [...RESETS] },
        timeZone: { type: 'string' },
        start: { ...isoDate, description: 'First instant of the period.' },
        end: { anyOf: [isoDate, { type: 'null' }], description: 'First instant after it; null for reset never.' },
        date: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'The period date in its zone.' },
        seq: decimalId,
      },
    },
    DecodedId: {
      type: 'object',
      required: ['id', 'timestamp', 'timestampMs', 'worker', 'timeBack', 'sequence', 'reserved'],
      description: 'The parts of a snowflake id; further explanatory fields may be present.',
      properties: {
        id: decimalId,
        timestamp: { ...isoDate, description: 'Start of the time unit the id was made in.' },
        timestampMs: unixMs,
        region: int32(
          0,
          undefined,
          'The region that made it (IDPOOL_REGION); present when the layout has region bits.',
        ),
        worker: int32(0),
        timeBack: { type: 'integer', format: 'int32', enum: [0, 1] },
        sequence: int32(0),
        reserved: int32(0),
      },
    },
  };
}

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

/** Entities as the admin API takes and shows them; requests come from the zod schemas that validate them. */
function entitySchemas(): Record<string, Schema> {
  return {
    RegisterRequest: fromZod(registerSchema),
    UpdateRequest: fromZod(updateSchema),
    EntityFields: {
      type: 'object',
      description:
        'Fields shared by Entity and RegisteredEntity (no additional-property rule here, so both can close it).',
      required: [
        'key',
        'name',
        'mode',
        'maxSizePerTimes',
        'maxSizePerSecond',
        'compat',
        'secrets',
        'createTime',
        'updateTime',
      ],
      // A snowflake entity has no pool, so none of its fields (it refuses them on input); a segment entity has all.
      if: { properties: { mode: { const: 'snowflake' } } },
      then: { not: { anyOf: SEGMENT_ONLY.map((field) => ({ required: [field] })) } },
      else: { required: [...SEGMENT_ONLY] },
      properties: {
        key: entityKey,
        name: { type: 'string', maxLength: 128 },
        mode: { type: 'string', enum: ['monotonic', 'trend', 'snowflake'] },
        startOffset: decimalId,
        step: int32(1, LIMITS.step),
        maxSizePerTimes: int32(1, LIMITS.maxSizePerTimes),
        maxSizePerSecond: int32(0, LIMITS.maxSizePerSecond, '0 = unlimited.'),
        minSizePercent: int32(1, 99),
        maxPoolSize: int32(1, LIMITS.maxPoolSize),
        interval: int32(0, undefined, 'Least ms between two refill checks of this entity (default: the refill tick).'),
        delta: int32(1, LIMITS.delta, 'Ids are the numbers ≡ remainder (mod delta); 1 for every number.'),
        remainder: int32(0, LIMITS.delta - 1),
        format: { type: 'string', maxLength: 64, description: 'Business-number template (docs/numbers.md).' },
        reset: { type: 'string', enum: [...RESETS] },
        timeZone: { type: 'string', description: 'IANA name or fixed offset of the periods.' },
        gapless: { type: 'boolean', description: 'A gapless series: each number issued at the take, in the ledger.' },
        compat: {
          type: 'array',
          items: { type: 'string', enum: [...COMPAT_PROTOCOLS] },
          description:
            'Protocols that serve this entity without its secret (`leaf`: Leaf routes when IDPOOL_COMPAT has it).',
        },
        secrets: {
          type: 'array',
          maxItems: MAX_SECRETS,
          description: 'The secrets it accepts, newest first (never the secrets or their hashes).',
          items: {
            type: 'object',
            required: ['id', 'createTime', 'expiresAt'],
            additionalProperties: false,
            properties: {
              id: { type: 'string' },
              createTime: isoDate,
              expiresAt: { anyOf: [isoDate, { type: 'null' }] },
            },
          },
        },
        createTime: isoDate,
        updateTime: isoDate,
        held: {
          anyOf: [{ type: 'string' }, { type: 'null' }],
          description: 'Why it serves no ids until released (503 `entity_held`); null: served.',
        },
        incumbent: {
          anyOf: [
            {
              type: 'object',
              required: ['kind', 'key', 'live'],
              additionalProperties: false,
              properties: {
                kind: { type: 'string', enum: ['leaf', 'tinyid'] },
                key: { type: 'string' },
                live: { type: 'boolean', description: "Segments reserved from the incumbent's row (a live cutover)." },
              },
            },
            { type: 'null' },
          ],
          description: 'The Leaf or Tinyid row it was imported from (docs/migrating.md); null: registered natively.',
        },
        alias: {
          anyOf: [{ type: 'string', maxLength: 190 }, { type: 'null' }],
          description:
            "The incumbent's tag when it does not fit idpool's keys (`order:v2`, imported with `--key`): Leaf's and Tinyid's routes answer it as the key; null otherwise.",
        },
        currentOffset: { anyOf: [decimalId, { type: 'null' }], description: 'Next unreserved number of the line.' },
        pool: {
          type: 'object',
          description: 'Segment entities only.',
          required: ['size', 'target', 'max', 'lowWatermark'],
          additionalProperties: false,
          properties: { size: int32(0), target: int32(1), max: int32(1), lowWatermark: int32(0) },
        },
        period: { ...ref('NumberPeriod'), description: "Business-number entities only: now's period and its use." },
      },
    },
    Entity: { allOf: [ref('EntityFields')], unevaluatedProperties: false },
    RegisteredEntity: {
      allOf: [ref('EntityFields')],
      required: ['secret'],
      properties: { secret: { ...secret, description: 'Shown once; send as `Authorization: Bearer <secret>`.' } },
      unevaluatedProperties: false,
    },
    EntityPage: {
      type: 'object',
      required: ['apps', 'next'],
      additionalProperties: false,
      properties: {
        apps: { type: 'array', maxItems: 1000, items: ref('Entity') },
        next: {
          anyOf: [entityKey, { type: 'null' }],
          description: 'Key to pass as `after` for the next page; null on the last page.',
        },
      },
    },
    Secret: { type: 'object', required: ['secret'], additionalProperties: false, properties: { secret } },
    RotateRequest: fromZod(rotateSchema),
    RaiseRequest: fromZod(raiseSchema),
    RaisePeriodRequest: fromZod(raisePeriodSchema),
    RaisedPeriod: {
      type: 'object',
      required: ['key', 'period', 'seq'],
      additionalProperties: false,
      properties: { key: entityKey, period: { type: 'string' }, seq: decimalId },
    },
    AddSecretRequest: fromZod(addSecretSchema),
    ...gaplessSchemas(),
    AddedSecret: {
      type: 'object',
      required: ['id', 'added', 'expiresAt'],
      additionalProperties: false,
      properties: {
        id: { type: 'string' },
        added: { type: 'boolean', description: 'False when the entity already accepted this secret.' },
        secret: { ...secret, description: 'Only when made here: shown once.' },
        expiresAt: { anyOf: [isoDate, { type: 'null' }] },
      },
    },
  };
}

/** Snowflake worker leases, and what the liveness and readiness probes answer. */
function workerAndProbeSchemas(): Record<string, Schema> {
  return {
    Worker: {
      type: 'object',
      required: ['workerId', 'code', 'heartbeatAt', 'lastTimestamp', 'live'],
      description: 'One worker id lease; further fields may be present.',
      properties: {
        workerId: int32(0),
        code: { type: ['string', 'null'], description: 'The instance holding or last holding the lease.' },
        leaseVersion: { type: 'integer', format: 'int64', minimum: 0, description: 'Bumped by every acquisition.' },
        heartbeatAt: { anyOf: [isoDate, { type: 'null' }] },
        lastTimestamp: {
          anyOf: [isoDate, { type: 'null' }],
          description: 'Time up to which the holder may have made ids; the next holder starts after it.',
        },
        live: { type: 'boolean' },
        self: { type: 'boolean', description: 'The answering instance holds this lease.' },
      },
    },
    WorkerList: {
      type: 'object',
      required: ['workers'],
      additionalProperties: false,
      properties: { workers: { type: 'array', items: ref('Worker') } },
    },
    Health: {
      type: 'object',
      required: ['status'],
      additionalProperties: false,
      properties: { status: { const: 'ok' } },
    },
    Readiness: {
      type: 'object',
      required: ['status', 'checks'],
      additionalProperties: false,
      properties: {
        status: { type: 'string', enum: ['ready', 'not_ready'] },
        reason: { type: 'string', description: 'Why not ready (present on 503).' },
        degraded: {
          type: 'array',
          items: { type: 'string' },
          description:
            "Failed checks that leave the instance ready: a live cutover's incumbent database (its live entities answer 503; the rest serve).",
        },
        checks: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description: '"ok" or what failed, per dependency.',
        },
        sampling: ref('Sampling'),
      },
    },
    Sampling: {
      type: 'object',
      description:
        'How current the ops sampler (dashboard rows, pool gauges, pool alarms) is. Informational: it does not change readiness.',
      required: ['ok', 'oldestSampleAgeSeconds', 'roundSeconds', 'staleEntities'],
      additionalProperties: false,
      properties: {
        ok: { type: 'boolean', description: 'Every segment entity sampled within two rounds.' },
        oldestSampleAgeSeconds: { type: 'number', minimum: 0 },
        roundSeconds: {
          type: 'number',
          minimum: 0,
          description: 'Seconds one round over every entity takes (1,000 entities a sampling run).',
        },
        staleEntities: int32(0),
      },
    },
  };
}

/** One alarm of the overview's recent list. */
function alarmSchema(): Schema {
  return {
    type: 'object',
    required: ['name', 'severity', 'message', 'at', 'status', 'notified'],
    properties: {
      name: { type: 'string' },
      severity: { type: 'string', enum: ['warning', 'critical'] },
      entityKey,
      message: { type: 'string' },
      details: { type: 'object' },
      at: isoDate,
      status: { type: 'string', enum: ['firing', 'resolved'] },
      notified: { type: 'boolean' },
      instance: { type: 'string', description: 'The instance that raised it (host:pid).' },
    },
  };
}

/** One instance of the fleet, from its heartbeat (`GET /admin/instances`). */
function instanceSchema(): Schema {
  const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });
  return {
    type: 'object',
    required: [
      'id',
      'address',
      'version',
      'node',
      'startedAt',
      'workerId',
      'epoch',
      'dialect',
      'lastSampleAt',
      'activeAlarms',
      'ttlMs',
      'state',
      'heartbeatAt',
      'heartbeatAgeSeconds',
      'self',
      'disagrees',
    ],
    additionalProperties: false,
    properties: {
      id: { type: 'string', description: 'host:pid, the name its alarms carry.' },
      address: { type: 'string', description: 'host:port it listens on.' },
      version: { type: 'string', description: 'idpool version.' },
      node: { type: 'string', description: 'Node.js version.' },
      startedAt: isoDate,
      workerId: nullable(int32(0, undefined, 'The snowflake worker id it holds; null when none is held.')),
      epoch: nullable({ type: 'string', description: 'The Redis epoch (run_id:master_replid) its connection sees.' }),
      dialect: { type: 'string', description: 'mysql, postgres or sqlite.' },
      library: nullable({
        type: 'string',
        description:
          'The Redis function library it calls (idpool_<hash>); null without Redis; absent from releases before versioned libraries.',
      }),
      clockSkewMs: {
        type: 'object',
        description:
          "Its clock minus Redis's (redis) and the database's (database), in ms, as it last checked; null when not read. Absent from older releases.",
        additionalProperties: nullable({ type: 'number' }),
      },
      lastSampleAt: nullable(isoDate),
      activeAlarms: int32(0, undefined, 'Alarm conditions on at that instance.'),
      ttlMs: int32(1, undefined, 'Gone when its heartbeat is older than this.'),
      state: {
        type: 'string',
        enum: ['alive', 'gone'],
        description: 'gone: no heartbeat within its TTL (listed for 30 TTLs, then dropped).',
      },
      heartbeatAt: isoDate,
      heartbeatAgeSeconds: { type: 'number', minimum: 0 },
      self: { type: 'boolean', description: 'The instance answering.' },
      disagrees: {
        type: 'array',
        items: { type: 'string', enum: ['epoch', 'version'] },
        description: 'What it differs from most alive instances on.',
      },
    },
  };
}

/** `GET /admin/instances`: the fleet as the answering instance sees it. */
function instancesSchema(): Schema {
  return {
    type: 'object',
    required: ['at', 'source', 'alive', 'gone', 'disagreement', 'instances'],
    additionalProperties: false,
    properties: {
      at: isoDate,
      source: {
        type: 'string',
        enum: ['redis', 'local'],
        description:
          "redis: every instance's heartbeat; local: this instance only (embedded, or Redis did not answer: `note`).",
      },
      note: { type: 'string' },
      alive: int32(0),
      gone: int32(0),
      disagreement: {
        type: 'object',
        required: ['epoch', 'version'],
        additionalProperties: false,
        properties: { epoch: { type: 'boolean' }, version: { type: 'boolean' } },
      },
      instances: { type: 'array', items: ref('Instance'), description: 'Alive first, then gone; by id.' },
    },
  };
}

/** One segment entity of the overview: its pool, rates, forecasts and recent history. */
function entityOverviewSchema(): Schema {
  return {
    type: 'object',
    required: [
      'key',
      'mode',
      'pool',
      'currentOffset',
      'highestId',
      'takePerSecond',
      'reservePerSecond',
      'forecast',
      'history',
      'sampledAt',
      'stale',
    ],
    additionalProperties: false,
    properties: {
      key: entityKey,
      mode: { type: 'string', enum: ['monotonic', 'trend'] },
      pool: {
        type: 'object',
        required: ['size', 'target', 'max', 'lowWatermark', 'fillPercent'],
        additionalProperties: false,
        properties: {
          size: int32(0),
          target: int32(0),
          max: int32(0),
          lowWatermark: int32(0),
          fillPercent: {
            type: 'number',
            format: 'double',
            description: 'size against target (what a refill tops up to), not max; above 100 while demand falls',
          },
        },
      },
      currentOffset: decimalId,
      highestId: { anyOf: [decimalId, { type: 'null' }] },
      takePerSecond: { type: 'number', minimum: 0 },
      reservePerSecond: { type: 'number', minimum: 0 },
      forecast: {
        type: 'object',
        description: 'Seconds; null = never at the current rate.',
        required: ['poolDrySeconds', 'jsSafeLimitSeconds', 'int63LimitSeconds'],
        additionalProperties: false,
        properties: {
          poolDrySeconds: nullableNumber,
          jsSafeLimitSeconds: nullableNumber,
          int63LimitSeconds: nullableNumber,
        },
      },
      history: {
        type: 'array',
        items: {
          type: 'object',
          required: ['t', 'size', 'takePerSecond'],
          additionalProperties: false,
          properties: { t: unixMs, size: int32(0), takePerSecond: { type: 'number', format: 'double', minimum: 0 } },
        },
      },
      sampledAt: {
        anyOf: [unixMs, { type: 'null' }],
        description: 'Unix ms of the last sample; null before the first.',
      },
      stale: {
        type: 'boolean',
        description: 'Not sampled within two sampling rounds: the values are the last ones read, not current.',
      },
      period: {
        ...ref('NumberPeriod'),
        description:
          "Business-number entities only: now's period, its use and forecast (the pool is its ready numbers; highestId and the 2^53 and 2^63 forecasts do not apply).",
      },
    },
  };
}

/** Now's period of a business-number entity (docs/numbers.md, "Capacity and alarms"). */
function numberPeriodSchema(): Schema {
  const text = { type: 'string' };
  return {
    type: 'object',
    required: [
      'id',
      'start',
      'end',
      'timeZone',
      'used',
      'capacity',
      'digits',
      'usedPercent',
      'ready',
      'takePerSecond',
      'runsOutAt',
      'runsOutLocal',
      'runsOutBeforeEnd',
    ],
    additionalProperties: false,
    properties: {
      id: { ...text, description: "The period's name (`20261128`; `all` for `never`)." },
      start: isoDate,
      end: { anyOf: [isoDate, { type: 'null' }], description: "The next period's start; null for `never`." },
      timeZone: text,
      used: { ...decimalId, description: 'Numbers of the period handed out or dropped as gaps.' },
      capacity: { ...decimalId, description: '10^N − 1 for `{seq:N}`.' },
      digits: int32(1, 18),
      usedPercent: { type: 'number', minimum: 0 },
      ready: int32(0),
      takePerSecond: {
        type: 'number',
        minimum: 0,
        description: 'Over IDPOOL_OPS_PERIOD_RATE_WINDOW_MS (15 min) of this period; 0 before it is sampled.',
      },
      runsOutAt: { anyOf: [isoDate, { type: 'null' }], description: 'At that rate; null when nothing is taken.' },
      runsOutLocal: {
        anyOf: [text, { type: 'null' }],
        description: "The same in the period's zone: `14:20`, with the date when not today there.",
      },
      runsOutBeforeEnd: { type: 'boolean', description: 'The `forecast_period_exhausted` alarm holds.' },
    },
  };
}

/** One snowflake entity of the overview: it has no pool, only a take rate. */
function snowflakeEntityOverviewSchema(): Schema {
  return {
    type: 'object',
    required: ['key', 'mode', 'takePerSecond'],
    additionalProperties: false,
    properties: {
      key: entityKey,
      mode: { type: 'string', enum: ['snowflake'] },
      takePerSecond: {
        type: 'number',
        minimum: 0,
        description: 'Ids per second served by the answering instance (each instance makes its own snowflake ids).',
      },
    },
  };
}

/** `GET /admin/ops`: what the dashboard shows. */
function opsOverviewSchema(): Schema {
  return {
    type: 'object',
    required: [
      'at',
      'entityCount',
      'matching',
      'entities',
      'snowflake',
      'sampling',
      'workers',
      'alarms',
      'rates',
      'instances',
    ],
    additionalProperties: false,
    properties: {
      at: isoDate,
      entityCount: int32(0, undefined, 'Live entities in all.'),
      matching: int32(
        0,
        undefined,
        'Entities whose key contains `q` (all without it); `entities` lists the busiest of them.',
      ),
      entities: {
        type: 'array',
        items: { anyOf: [ref('EntityOverview'), ref('SnowflakeEntityOverview')] },
        description: 'Busiest first (take rate), then by key.',
      },
      snowflake: {
        anyOf: [
          {
            type: 'object',
            required: ['timeExhaustedAt', 'jsSafeLimitAt'],
            additionalProperties: false,
            description: 'null dates: past the last date JavaScript can show (year 275760), i.e. never.',
            properties: {
              timeExhaustedAt: { anyOf: [isoDate, { type: 'null' }] },
              jsSafeLimitAt: { anyOf: [isoDate, { type: 'null' }] },
              region: int32(0, undefined, 'IDPOOL_REGION, when the layout has region bits.'),
            },
          },
          { type: 'null' },
        ],
      },
      sampling: ref('Sampling'),
      workers: { type: 'array', items: ref('Worker'), description: 'Live worker leases only.' },
      alarms: {
        type: 'object',
        required: ['scope', 'instance', 'active', 'recent'],
        additionalProperties: false,
        description:
          "fleet: every instance's recent alarms (from Redis), each naming its instance; instance: this instance's own (embedded mode, or Redis did not answer, which `note` says).",
        properties: {
          scope: { type: 'string', enum: ['fleet', 'instance'] },
          note: { type: 'string' },
          instance: { type: 'string', description: 'The instance answering (host:pid).' },
          active: int32(0, undefined, 'Alarm conditions on now, over the alive instances (scope fleet).'),
          recent: { type: 'array', items: ref('Alarm'), description: 'Newest first.' },
        },
      },
      rates: {
        type: 'object',
        required: ['scope', 'instances'],
        additionalProperties: false,
        description:
          "Whose take rates `entities` shows: fleet = summed over the alive instances; instance = this instance's (the fleet could not be read: `note`). Per-instance figures are in each instance's /metrics.",
        properties: {
          scope: { type: 'string', enum: ['fleet', 'instance'] },
          instances: int32(1),
          note: { type: 'string' },
        },
      },
      instances: ref('Instances'),
    },
  };
}

/** A gapless series' ledger rows, page, audit and reconcile (docs/numbers.md "Gapless series"). */
function gaplessSchemas(): Record<string, Schema> {
  const seq = { type: 'string', pattern: '^[0-9]+$', maxLength: 19 };
  const range = {
    type: 'object',
    required: ['from', 'to'],
    additionalProperties: false,
    properties: { from: seq, to: seq },
  };
  return {
    LedgerEntry: {
      type: 'object',
      required: ['number', 'period', 'seq', 'issuedAt', 'reference', 'status', 'reason'],
      additionalProperties: false,
      properties: {
        number: { type: 'string' },
        period: { type: 'string' },
        seq,
        issuedAt: { ...isoDate, description: "By the database's clock." },
        reference: { type: ['string', 'null'] },
        status: { type: 'string', enum: ['issued', 'void', 'lost'] },
        reason: { type: ['string', 'null'], description: 'Why it was voided, or entered lost.' },
      },
    },
    LedgerPage: {
      type: 'object',
      required: ['key', 'period', 'numbers', 'next'],
      additionalProperties: false,
      properties: {
        key: entityKey,
        period: { type: 'string' },
        numbers: { type: 'array', maxItems: 1000, items: ref('LedgerEntry') },
        next: { anyOf: [seq, { type: 'null' }], description: 'The `after` of the next page; null on the last.' },
      },
    },
    LedgerAudit: {
      type: 'object',
      required: ['key', 'period', 'first', 'last', 'counter', 'issued', 'voided', 'lost', 'holes', 'duplicates'],
      additionalProperties: false,
      properties: {
        key: entityKey,
        period: { type: 'string' },
        first: { anyOf: [seq, { type: 'null' }] },
        last: { anyOf: [seq, { type: 'null' }] },
        counter: seq,
        issued: { type: 'integer', minimum: 0 },
        voided: { type: 'integer', minimum: 0 },
        lost: { type: 'integer', minimum: 0 },
        holes: {
          type: 'array',
          items: range,
          description: 'Sequences up to the counter with no ledger row: always empty.',
        },
        duplicates: { type: 'array', items: { type: 'string' }, description: 'Numbers written twice: always empty.' },
      },
    },
    VoidRequest: {
      type: 'object',
      required: ['reason'],
      additionalProperties: false,
      properties: { reason: { type: 'string', minLength: 1, maxLength: 255 } },
    },
    ReconcileRequest: {
      type: 'object',
      additionalProperties: false,
      properties: { period: { type: 'string', description: "Default: now's period by the database's clock." } },
    },
    Reconciled: {
      type: 'object',
      required: ['key', 'period', 'record'],
      additionalProperties: false,
      properties: {
        key: entityKey,
        period: { type: 'string' },
        record: { type: 'string', enum: ['redis', 'high-water file', 'none'] },
        lost: { ...range, description: 'The sequences entered lost; absent when the ledger was not behind.' },
      },
    },
  };
}
