import { LIMITS, registerSchema, updateSchema } from '../../entities/entity';
import { type Schema, decimalId, fromZod, isoDate, nullableNumber, ref } from './parts';

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
    SnowflakeEntityOverview: snowflakeEntityOverviewSchema(),
    OpsOverview: opsOverviewSchema(),
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
            code: { type: 'string', enum: ['invalid_request', 'unauthorized', 'not_found', 'conflict', 'payload_too_large', 'rate_limited', 'pool_exhausted', 'unavailable', 'internal'] },
            message: { type: 'string' },
          },
        },
      },
    },
    TakeRequest: {
      type: 'object',
      additionalProperties: false,
      properties: { count: { type: 'integer', minimum: 1, maximum: LIMITS.maxSizePerTimes, default: 1, description: 'At most the entity maxSizePerTimes.' } },
    },
    Ids: {
      type: 'object',
      required: ['ids'],
      additionalProperties: false,
      properties: { ids: { type: 'array', minItems: 1, items: decimalId } },
    },
    DecodedId: {
      type: 'object',
      required: ['id', 'timestamp', 'worker', 'timeBack', 'sequence', 'reserved'],
      description: 'The parts of a snowflake id; further explanatory fields (such as the time as a date) may be present.',
      properties: {
        id: decimalId,
        timestamp: { type: ['integer', 'string'] },
        worker: { type: 'integer', minimum: 0 },
        timeBack: { type: 'integer', enum: [0, 1] },
        sequence: { type: 'integer', minimum: 0 },
        reserved: { type: 'integer', minimum: 0 },
      },
    },
  };
}

/** Entities as the admin API takes and shows them; requests come from the zod schemas that validate them. */
function entitySchemas(): Record<string, Schema> {
  return {
    RegisterRequest: fromZod(registerSchema),
    UpdateRequest: fromZod(updateSchema),
    AppFields: {
      type: 'object',
      description: 'Fields shared by App and RegisteredApp (no additional-property rule here, so both can close it).',
      required: ['key', 'name', 'mode', 'startOffset', 'step', 'maxSizePerTimes', 'maxSizePerSecond', 'minSizePercent', 'maxPoolSize', 'interval', 'createTime', 'updateTime', 'currentOffset'],
      properties: {
        key: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
        name: { type: 'string' },
        mode: { type: 'string', enum: ['monotonic', 'trend', 'snowflake'] },
        startOffset: decimalId,
        step: { type: 'integer', minimum: 1 },
        maxSizePerTimes: { type: 'integer', minimum: 1 },
        maxSizePerSecond: { type: 'integer', minimum: 0 },
        minSizePercent: { type: 'integer', minimum: 1, maximum: 99 },
        maxPoolSize: { type: 'integer', minimum: 1 },
        interval: { type: 'integer', description: 'least ms between two refill checks of this entity (default: the refill tick)' },
        createTime: isoDate,
        updateTime: isoDate,
        currentOffset: { anyOf: [decimalId, { type: 'null' }], description: 'Next unreserved number of the line.' },
        pool: {
          type: 'object',
          description: 'Segment entities only.',
          required: ['size', 'target', 'max', 'lowWatermark'],
          additionalProperties: false,
          properties: { size: { type: 'integer', minimum: 0 }, target: { type: 'integer', minimum: 1 }, max: { type: 'integer' }, lowWatermark: { type: 'integer' } },
        },
      },
    },
    App: { allOf: [ref('AppFields')], unevaluatedProperties: false },
    RegisteredApp: {
      allOf: [ref('AppFields')],
      required: ['secret'],
      properties: { secret: { type: 'string', description: 'Shown once; send as `Authorization: Bearer <secret>`.' } },
      unevaluatedProperties: false,
    },
    Secret: { type: 'object', required: ['secret'], additionalProperties: false, properties: { secret: { type: 'string' } } },
  };
}

/** Snowflake worker leases, and what the liveness and readiness probes answer. */
function workerAndProbeSchemas(): Record<string, Schema> {
  return {
    Worker: {
      type: 'object',
      required: ['workerId', 'code', 'heartbeatAt', 'lastTimestamp', 'live'],
      properties: {
        workerId: { type: 'integer', minimum: 0 },
        code: { type: ['string', 'null'] },
        heartbeatAt: { anyOf: [isoDate, { type: 'null' }] },
        lastTimestamp: { type: ['integer', 'string', 'null'] },
        live: { type: 'boolean' },
      },
    },
    Health: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
    Readiness: {
      type: 'object',
      required: ['status', 'checks'],
      additionalProperties: false,
      properties: {
        status: { type: 'string', enum: ['ready', 'not_ready'] },
        reason: { type: 'string', description: 'Why not ready (present on 503).' },
        checks: { type: 'object', additionalProperties: { type: 'string' }, description: '"ok" or what failed, per dependency.' },
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
      entityKey: { type: 'string' },
      message: { type: 'string' },
      details: { type: 'object' },
      at: isoDate,
      status: { type: 'string', enum: ['firing', 'resolved'] },
      notified: { type: 'boolean' },
    },
  };
}

/** One segment entity of the overview: its pool, rates, forecasts and recent history. */
function entityOverviewSchema(): Schema {
  return {
    type: 'object',
    required: ['key', 'mode', 'pool', 'currentOffset', 'highestId', 'takePerSecond', 'reservePerSecond', 'forecast', 'history'],
    additionalProperties: false,
    properties: {
      key: { type: 'string' },
      mode: { type: 'string', enum: ['monotonic', 'trend'] },
      pool: {
        type: 'object',
        required: ['size', 'target', 'max', 'lowWatermark', 'fillPercent'],
        additionalProperties: false,
        properties: { size: { type: 'integer' }, target: { type: 'integer' }, max: { type: 'integer' }, lowWatermark: { type: 'integer' }, fillPercent: { type: 'number' } },
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
        properties: { poolDrySeconds: nullableNumber, jsSafeLimitSeconds: nullableNumber, int63LimitSeconds: nullableNumber },
      },
      history: {
        type: 'array',
        items: {
          type: 'object',
          required: ['t', 'size', 'takePerSecond'],
          additionalProperties: false,
          properties: { t: { type: 'integer', description: 'Unix ms' }, size: { type: 'integer' }, takePerSecond: { type: 'number' } },
        },
      },
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
      key: { type: 'string' },
      mode: { type: 'string', enum: ['snowflake'] },
      takePerSecond: { type: 'number', minimum: 0, description: 'Ids per second served by the answering instance (each instance makes its own snowflake ids).' },
    },
  };
}

/** `GET /admin/ops`: what the dashboard shows. */
function opsOverviewSchema(): Schema {
  return {
    type: 'object',
    required: ['at', 'entityCount', 'matching', 'entities', 'snowflake', 'workers', 'alarms'],
    additionalProperties: false,
    properties: {
      at: isoDate,
      entityCount: { type: 'integer', minimum: 0, description: 'Live entities in all.' },
      matching: { type: 'integer', minimum: 0, description: 'Entities whose key contains `q` (all without it); `entities` lists the busiest of them.' },
      entities: { type: 'array', items: { anyOf: [ref('EntityOverview'), ref('SnowflakeEntityOverview')] }, description: 'Busiest first (take rate), then by key.' },
      snowflake: {
        anyOf: [
          {
            type: 'object',
            required: ['timeExhaustedAt', 'jsSafeLimitAt'],
            additionalProperties: false,
            properties: { timeExhaustedAt: isoDate, jsSafeLimitAt: { anyOf: [isoDate, { type: 'null' }] } },
          },
          { type: 'null' },
        ],
      },
      workers: { type: 'array', items: ref('Worker'), description: 'Live worker leases only.' },
      alarms: {
        type: 'object',
        required: ['active', 'recent'],
        additionalProperties: false,
        properties: { active: { type: 'integer', minimum: 0 }, recent: { type: 'array', items: ref('Alarm') } },
      },
    },
  };
}
