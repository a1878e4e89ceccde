import { z } from 'zod';
import type { NumberSettings } from '../numbers/scheme';

const ENTITY_MODES = ['monotonic', 'trend', 'snowflake'] as const;
export type EntityMode = (typeof ENTITY_MODES)[number];

/** A registered entity, as cached in process (the hot path reads no SQL). */
export interface EntityConfig {
  readonly key: string;
  readonly name: string;
  readonly mode: EntityMode;
  readonly startOffset: bigint;
  readonly step: number;
  readonly maxSizePerTimes: number;
  readonly maxSizePerSecond: number;
  readonly minSizePercent: number;
  readonly maxPoolSize: number;
  readonly interval: number;
  /**
   * Tinyid's spacing: ids are the numbers ≡ `remainder` (mod `delta`), composed with the stride by `IdStride.of`
   * (docs/design.md "Data model"). Fixed at registration: another spacing would map later numbers onto issued ids.
   */
  readonly delta: number;
  readonly remainder: number;
  /** Other protocols that may serve this entity without its secret (`leaf`): none unless an admin opts it in. */
  readonly compat: readonly CompatProtocol[];
  /** Every secret the entity accepts, newest first (at most `MAX_SECRETS`, `secrets.ts`); hashes only. */
  readonly secrets: readonly EntitySecret[];
  /** Business numbers (docs/numbers.md). Fixed at registration: another template or zone would repeat numbers. */
  readonly numbers?: NumberSettings;
  /** A gapless series (docs/numbers.md "Gapless series"): only with `numbers`; fixed at registration. */
  readonly gapless?: boolean;
  readonly createTime: number;
  readonly updateTime: number;
  /** Why the entity is served on no route until released (`idpool apps release`); absent or null: served. */
  readonly held?: string | null;
  /** The incumbent's row the entity was imported from (`live`: a live cutover). */
  readonly incumbent?: IncumbentSource | null;
  /** An incumbent's tag that does not fit idpool's keys (`order:v2`): Leaf's and Tinyid's routes answer it too. */
  readonly alias?: string | null;
}

/** Leaf's `leaf_alloc` row `key` (its `biz_tag`) or Tinyid's `tiny_id_info` row (its `biz_type`). */
const incumbentSource = z.strictObject({
  kind: z.enum(['leaf', 'tinyid']),
  key: z.string().min(1).max(190),
  /** Segments are reserved from that row, as one more of the incumbent's servers would (docs/migrating.md "Live cutover"). */
  live: z.boolean(),
});
export type IncumbentSource = Readonly<z.infer<typeof incumbentSource>>;

/** Why a stop-first import holds an entity until its row is read once more (docs/migrating.md "If a row moved"). */
export const HELD_BY_IMPORT =
  'its incumbent row may still move (it moved during the import, or the import has not finished): stop every instance of the incumbent, then run idpool apps release KEY --database-url URL';

/** Protocols an entity can opt in to, answered without a credential (docs/security.md). */
export const COMPAT_PROTOCOLS = ['leaf'] as const;
export type CompatProtocol = (typeof COMPAT_PROTOCOLS)[number];

/** One accepted secret, as stored: never the secret itself. */
export interface EntitySecret {
  /** Random, unrelated to the secret: names it in the admin API. */
  readonly id: string;
  readonly hash: string;
  readonly createTime: number;
  /** Unix ms after which it is refused (the service clock); null: until removed or rotated out. */
  readonly expiresAt: number | null;
}

/** The longest overlap `rotate-secret --keep-old-for` and an expiring secret allow: 30 days. */
const MAX_SECRET_TTL_S = 30 * 24 * 3600;

/** A secret given by an admin (an imported Tinyid token): it travels in headers and query strings; 16 chars at least. */
export const providedSecret = z
  .string()
  .regex(/^[\x21-\x7e]{16,256}$/, 'must be 16-256 printable ASCII characters without spaces');

export const KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

// One refill (≤ maxPoolSize ids, ~12 bytes each in Redis) stays under ~60 MB, pushed 10,000 ids a call.
export const LIMITS = {
  step: 1_000_000,
  maxSizePerTimes: 100_000,
  maxSizePerSecond: 10_000_000,
  maxPoolSize: 5_000_000,
  /** Tinyid's `delta` is an int; a million keeps `count·delta` of any stride far inside 2^53. */
  delta: 1_000_000,
  /** Offsets stay below 2^62 so `current_offset + k·step` cannot overflow BIGINT. */
  startOffset: 2n ** 62n,
} as const;

/** Default pool: a minute of ids at the per-second limit (docs/design.md "Data model"). */
const SECONDS_OF_POOL = 60;
const DEFAULT_POOL_WHEN_UNLIMITED = 300_000;

const int = (min: number, max: number) =>
  z
    .number({ error: `must be an integer from ${min} to ${max}` })
    .int(`must be an integer from ${min} to ${max}`)
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const offset = z
  .union([z.number().int().nonnegative(), z.string().regex(/^\d{1,19}$/)], {
    error: 'must be a non-negative integer (a decimal string for values above 2^53)',
  })
  .transform((v) => BigInt(v))
  .refine((v) => v < LIMITS.startOffset, { message: 'must be below 2^62' });

// C0, DEL, C1 and the bidi overrides and isolates: printed raw by the CLI and the dashboard, they could rewrite a
// terminal or reorder what an operator reads. Emoji joiners stay.
// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** A UTF-16 surrogate without its pair: not a character, and refused by MySQL's utf8mb4. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const entityName = z
  .string()
  .min(1)
  .max(128)
  .refine((name) => !CONTROL.test(name), { message: 'must not contain control characters' })
  .refine((name) => !LONE_SURROGATE.test(name), { message: 'must be well-formed Unicode (no lone surrogates)' });

const tunables = {
  name: entityName,
  step: int(1, LIMITS.step),
  maxSizePerTimes: int(1, LIMITS.maxSizePerTimes),
  maxSizePerSecond: int(0, LIMITS.maxSizePerSecond),
  minSizePercent: int(1, 99),
  maxPoolSize: int(1, LIMITS.maxPoolSize),
  interval: int(10, 60_000),
  compat: z
    .array(z.enum(COMPAT_PROTOCOLS, { error: `must list only ${COMPAT_PROTOCOLS.join(', ')}` }))
    .max(COMPAT_PROTOCOLS.length),
};

/** Business numbers' fields (checked in `validation.ts` by `NumberScheme.settings`, which names the broken one). */
const numberFields = {
  format: z.string({ error: 'must be a template such as INV{yyyy}{MM}{dd}-{seq:6}' }).optional(),
  reset: z.string({ error: 'must be never, yearly, monthly, daily or hourly' }).optional(),
  timeZone: z.string({ error: 'must be an IANA name (Asia/Shanghai) or an offset (+08:00)' }).optional(),
  gapless: z.boolean({ error: 'must be true or false' }).optional(),
};

/** Registration: absent is the default; update: unchanged. */
const optionalTunables = Object.fromEntries(Object.entries(tunables).map(([k, v]) => [k, v.optional()])) as {
  [K in keyof typeof tunables]: z.ZodOptional<(typeof tunables)[K]>;
};

export const registerSchema = z.strictObject({
  key: z.string().regex(KEY_PATTERN, 'must be 1-64 of A-Z a-z 0-9 _ - .'),
  mode: z.enum(ENTITY_MODES).default('monotonic'),
  startOffset: offset.optional(),
  /** The lowest id the entity may issue (an importer's); turned into the start offset. */
  firstId: offset.optional(),
  delta: int(1, LIMITS.delta).optional(),
  remainder: int(0, LIMITS.delta - 1).optional(),
  secret: providedSecret.optional(),
  /** Registered held: why, as the 503 `entity_held` says it. */
  held: z.string().min(1).max(255).optional(),
  incumbent: incumbentSource.optional(),
  ...numberFields,
  ...optionalTunables,
});

export const updateSchema = z.strictObject({ ...numberFields, ...optionalTunables });

/** `POST /admin/apps/:key/raise`: no id below `firstId` is handed out from now on (an import catching up with the old service). */
export const raiseSchema = z.strictObject({ firstId: offset });

/** `POST /admin/apps/:key/hold`: serve no ids until released, saying why. */
export const holdSchema = z.strictObject({ reason: z.string().min(1).max(255).default(HELD_BY_IMPORT) });
/** `POST /admin/apps/:key/raise` of a business-number entity: no sequence ≤ `seq` in `period` from now on. */
export const raisePeriodSchema = z.strictObject({
  period: z.string({ error: 'must name a period, e.g. 20261128 for a daily entity' }).regex(/^(\d{4,10}|all)$/, {
    message: 'must name a period, e.g. 20261128 for a daily entity (all for reset never)',
  }),
  seq: offset,
});

/** `POST /admin/apps/:key/secret`: a new secret; the old ones stay accepted for `keepOldForSeconds` (0: stop at once). */
export const rotateSchema = z.strictObject({ keepOldForSeconds: int(0, MAX_SECRET_TTL_S).optional() });

/** `POST /admin/apps/:key/secrets`: accept one more secret, given or made here, optionally for a while only. */
export const addSecretSchema = z.strictObject({
  secret: providedSecret.optional(),
  expiresInSeconds: int(1, MAX_SECRET_TTL_S).optional(),
});

export type RegisterInput = z.infer<typeof registerSchema>;
export type UpdateInput = z.infer<typeof updateSchema>;

export type Tunables = Pick<EntityConfig, keyof typeof tunables>;

/** A registration with its defaults (docs/design.md "Data model"); `interval` defaults to IDPOOL_REFILL_INTERVAL_MS. */
export function withDefaults(input: RegisterInput, refillTickMs = 100) {
  const step = input.step ?? 1000;
  const minSizePercent = input.minSizePercent ?? 80;
  const maxSizePerTimes = input.maxSizePerTimes ?? 1000;
  const maxSizePerSecond = input.maxSizePerSecond ?? 5000;
  let maxPoolSize = input.maxPoolSize;
  if (maxPoolSize === undefined) {
    const wanted = maxSizePerSecond > 0 ? SECONDS_OF_POOL * maxSizePerSecond : DEFAULT_POOL_WHEN_UNLIMITED;
    const needed = Math.max(Math.ceil((step * 100) / (100 - minSizePercent)), maxSizePerTimes);
    maxPoolSize = Math.min(Math.max(wanted, needed), LIMITS.maxPoolSize);
  }
  return {
    key: input.key,
    mode: input.mode,
    startOffset: input.startOffset ?? 0n,
    name: input.name ?? input.key,
    step,
    maxSizePerTimes,
    maxSizePerSecond,
    minSizePercent,
    maxPoolSize,
    interval: input.interval ?? refillTickMs,
    delta: input.delta ?? 1,
    remainder: input.remainder ?? 0,
    compat: [...new Set(input.compat ?? [])],
    held: input.held ?? null,
    incumbent: input.incumbent ?? null,
    alias: input.incumbent && input.incumbent.key !== input.key ? input.incumbent.key : null,
  };
}

/** The first broken rule between fields, or null. A refill adds whole steps: the room above the low watermark holds one. */
export function checkRules(t: Tunables & { delta?: number; remainder?: number }): string | null {
  if (t.delta !== undefined && t.remainder !== undefined && t.remainder >= t.delta)
    return `remainder (${t.remainder}) must be below delta (${t.delta}): ids are the numbers ≡ remainder (mod delta)`;
  if (t.maxPoolSize * (100 - t.minSizePercent) < t.step * 100) {
    return `maxPoolSize · (1 − minSizePercent/100) must be at least step (${t.maxPoolSize} · ${(100 - t.minSizePercent) / 100} < ${t.step})`;
  }
  if (t.maxPoolSize < t.maxSizePerTimes)
    return `maxPoolSize (${t.maxPoolSize}) must be at least maxSizePerTimes (${t.maxSizePerTimes})`;
  if (t.maxSizePerSecond > 0 && t.maxSizePerSecond < t.maxSizePerTimes) {
    return `maxSizePerSecond (${t.maxSizePerSecond}) must be 0 (unlimited) or at least maxSizePerTimes (${t.maxSizePerTimes})`;
  }
  return null;
}

/** The public view of an entity (no secret or hash); a snowflake entity has no pool fields to show. */
export function describeEntity(entity: EntityConfig) {
  const secrets = entity.secrets.map((s) => ({
    id: s.id,
    createTime: new Date(s.createTime).toISOString(),
    expiresAt: s.expiresAt === null ? null : new Date(s.expiresAt).toISOString(),
  }));
  const common = {
    key: entity.key,
    name: entity.name,
    mode: entity.mode,
    maxSizePerTimes: entity.maxSizePerTimes,
    maxSizePerSecond: entity.maxSizePerSecond,
    compat: [...entity.compat],
    secrets,
    createTime: new Date(entity.createTime).toISOString(),
    updateTime: new Date(entity.updateTime).toISOString(),
    held: entity.held ?? null,
    incumbent: entity.incumbent ?? null,
    alias: entity.alias ?? null,
  };
  if (entity.mode === 'snowflake') return common;
  return {
    ...common,
    startOffset: entity.startOffset.toString(),
    step: entity.step,
    minSizePercent: entity.minSizePercent,
    maxPoolSize: entity.maxPoolSize,
    interval: entity.interval,
    delta: entity.delta,
    remainder: entity.remainder,
    ...(entity.numbers && {
      format: entity.numbers.format,
      reset: entity.numbers.reset,
      timeZone: entity.numbers.timeZone,
      gapless: entity.gapless === true,
    }),
  };
}
