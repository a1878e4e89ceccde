import { ConflictError, InvalidRequestError, NotFoundError } from '../errors';
import type { IdStride } from '../segment/stride';
import {
  type EntityConfig,
  type EntitySecret,
  type RegisterInput,
  type UpdateInput,
  KEY_PATTERN,
  checkRules,
  withDefaults,
} from './entity';
import { MAX_SECRETS } from './secrets';
import { type NumberSettings, NumberScheme } from '../numbers/scheme';
import { NumberSettingsError } from '../numbers/template';

/** A registration's values: defaults filled in, `firstId` turned into the start offset, rules checked (else a 400). */
export function registrationValues(input: RegisterInput, refillTickMs: number, stride: IdStride) {
  if (input.mode === 'snowflake') refusePoolFields(input);
  if (input.mode === 'snowflake' && input.incumbent)
    throw new InvalidRequestError('an entity imported from an incumbent row has a number line: monotonic or trend');
  refuseFittingAlias(input);
  if (input.firstId !== undefined && input.startOffset !== undefined)
    throw new InvalidRequestError('give startOffset or firstId, not both');
  const numbers = numberSettings(input);
  const gapless = input.gapless === true && numbers !== undefined && gaplessInput(input, numbers);
  const values = withDefaults(
    gapless ? { ...input, maxSizePerTimes: input.maxSizePerTimes ?? GAPLESS_MAX_COUNT } : input,
    refillTickMs,
  );
  if (input.firstId !== undefined) values.startOffset = stride.of(values).firstNumberFrom(input.firstId);
  refuseBroken(values);
  return { ...values, ...(numbers && { numbers }), ...(gapless && { gapless }) };
}

/** The most numbers one gapless take may ask: each a ledger row in one transaction holding the counter's row lock. */
export const GAPLESS_MAX_COUNT = 100;
/** The widest gapless `{seq:N}`: its high-water record is a sorted set's score, a double exact to 2^53 (16 digits). */
const GAPLESS_MAX_SEQ_WIDTH = 15;

/** A gapless registration's own rules (with `format`, checked); true when they hold. */
function gaplessInput(input: RegisterInput, numbers: NumberSettings): true {
  if (input.mode !== 'monotonic')
    throw new InvalidRequestError('gapless: a gapless series is issued in order (mode monotonic), not ' + input.mode);
  if (NumberScheme.of(numbers).template.seqWidth > GAPLESS_MAX_SEQ_WIDTH)
    throw new InvalidRequestError(`gapless: {seq:N} of a gapless series is at most ${GAPLESS_MAX_SEQ_WIDTH} digits`);
  refuseGaplessCount(input.maxSizePerTimes);
  return true;
}

function refuseGaplessCount(maxSizePerTimes: number | undefined): void {
  if (maxSizePerTimes !== undefined && maxSizePerTimes > GAPLESS_MAX_COUNT)
    throw new InvalidRequestError(
      `maxSizePerTimes: a gapless series takes at most ${GAPLESS_MAX_COUNT} numbers at a time (each one a ledger row in one transaction)`,
    );
}

/** Only an incumbent tag that does not fit idpool's keys becomes an alias: one that fits would be a second key. */
function refuseFittingAlias(input: RegisterInput): void {
  const tag = input.incumbent?.key;
  if (tag === undefined || tag === input.key || !KEY_PATTERN.test(tag)) return;
  throw new InvalidRequestError(
    `incumbent.key "${tag}" fits idpool's keys: register it under that key (only a tag that does not fit is served under another)`,
  );
}

/**
 * A registration's business-number settings with their defaults; undefined without `format`. A number field without
 * `format`, or a field placing the line (each period's sequence starts at 1), is a 400.
 */
function numberSettings(input: RegisterInput): NumberSettings | undefined {
  if (input.format === undefined) {
    const given = (['reset', 'timeZone', 'gapless'] as const).find((f) => input[f] !== undefined && input[f] !== false);
    if (given) throw new InvalidRequestError(`${given}: only with format (a business-number template)`);
    return undefined;
  }
  if (input.mode === 'snowflake')
    throw new InvalidRequestError('format: business numbers are for monotonic and trend entities, not snowflake');
  const lineField = LINE_FIELDS.find((f) => input[f] !== undefined);
  if (lineField)
    throw new InvalidRequestError(
      `${lineField}: not used by business numbers (each period's sequence starts at 1; POST /admin/apps/:key/raise moves one up)`,
    );
  try {
    return NumberScheme.settings({ format: input.format, reset: input.reset, timeZone: input.timeZone });
  } catch (err) {
    if (err instanceof NumberSettingsError) throw new InvalidRequestError(err.message);
    throw err;
  }
}

/** `current` changed by `patch` at `updateTime`, the rules checked as for a registration. */
export function patchedEntity(current: EntityConfig, patch: UpdateInput, updateTime: number): EntityConfig {
  if (current.mode === 'snowflake') refusePoolFields(patch);
  refuseNumberChange(current, patch);
  if (current.gapless) refuseGaplessCount(patch.maxSizePerTimes);
  const { format: _f, reset: _r, timeZone: _z, gapless: _g, ...tunables } = patch;
  const next: EntityConfig = { ...current, ...stripUndefined(tunables), updateTime };
  refuseBroken(next);
  return next;
}

/** Business-number fields are fixed once registered (the counters would repeat numbers); the same value passes. */
function refuseNumberChange(current: EntityConfig, patch: UpdateInput): void {
  if (patch.gapless !== undefined && patch.gapless !== (current.gapless === true))
    throw new ConflictError(
      `gapless is fixed once registered (a series is gapless from its first number or not at all); register a new entity`,
    );
  for (const field of ['format', 'reset', 'timeZone'] as const) {
    const given = patch[field];
    if (given === undefined || given === current.numbers?.[field]) continue;
    throw new ConflictError(
      current.numbers
        ? `${field} is fixed once registered (numbers already issued would repeat or be misdated); register a new entity with the new ${field}`
        : `"${current.key}" issues plain ids; business numbers (${field}) are set at registration: register a new entity with a format`,
    );
  }
}

/** A 409 beyond {@link MAX_SECRETS}. */
export function refuseTooManySecrets(key: string, secrets: readonly EntitySecret[]): void {
  if (secrets.length > MAX_SECRETS)
    throw new ConflictError(
      `"${key}" would have ${secrets.length} secrets; at most ${MAX_SECRETS} at once (remove one, or rotate without --keep-old-for)`,
    );
}

/** `live` without the secret `id`: unknown is a 404, the last one a 409 (rotate instead). */
export function withoutSecret(key: string, live: readonly EntitySecret[], id: string): EntitySecret[] {
  if (!live.some((s) => s.id === id)) throw new NotFoundError(`entity "${key}" has no secret "${id}"`);
  const rest = live.filter((s) => s.id !== id);
  if (rest.length === 0)
    throw new ConflictError(`"${id}" is the only secret of "${key}"; rotate it instead of removing it`);
  return rest;
}

function refuseBroken(values: Parameters<typeof checkRules>[0]): void {
  const broken = checkRules(values);
  if (broken) throw new InvalidRequestError(broken);
}

/** Fields that place or space the number line (a business number's sequence has neither). */
const LINE_FIELDS = ['startOffset', 'firstId', 'delta', 'remainder'] as const;
/** Fields that shape a segment pool: a snowflake entity refuses them (400). */
const POOL_FIELDS = [...LINE_FIELDS, 'step', 'maxPoolSize', 'minSizePercent', 'interval'] as const;

function refusePoolFields(input: Partial<Record<(typeof POOL_FIELDS)[number], unknown>>): void {
  const given = POOL_FIELDS.find((field) => input[field] !== undefined);
  if (given)
    throw new InvalidRequestError(
      `${given}: not used by snowflake entities (their ids come from time, worker and sequence, not a pool)`,
    );
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
