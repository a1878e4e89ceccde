import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainableCommander } from 'ioredis';
import { type RedisClient, mastersOf } from './connection';
import { replyWord } from './errors';

/**
 * idpool's Redis function library: `commands/_prelude.lua` and one
 * `<name>-<numKeys>.lua` per function (registered as `idpool_<name>`).
 * Every call goes through here, so the key count comes from the file name
 * and a result code means one thing everywhere.
 */

/** Return codes of the Lua functions in `commands/` (negative = refused); each file's header says which it returns. */
enum ScriptCode {
  Ok = 0,
  Short = -1,
  EpochChanged = -2,
  RateLimited = -3,
  Fenced = -4,
  NotHolder = -5,
}

/** What a function's result code and the number beside it mean. */
export type ScriptOutcome =
  | { readonly kind: 'ok'; readonly value: number }
  | { readonly kind: 'short'; readonly size: number }
  | { readonly kind: 'epoch_changed' }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number }
  | { readonly kind: 'fenced' }
  | { readonly kind: 'not_holder' };

/** A function answered a code its caller does not expect: the library and this process disagree (a bug). */
export class ScriptCodeError extends Error {
  constructor(
    readonly functionName: string,
    readonly resultCode: number,
  ) {
    super(`${functionName} returned unknown code ${resultCode}`);
    this.name = 'ScriptCodeError';
  }
}

/**
 * The one map from a result code to its meaning. `expected` lists the
 * refusals the function may answer (its Lua header's Output); any other
 * code is a {@link ScriptCodeError}.
 */
export function scriptOutcome<K extends ScriptOutcome['kind']>(
  functionName: string,
  code: number,
  value: number | undefined,
  expected: readonly K[],
): Extract<ScriptOutcome, { kind: K | 'ok' }> {
  const outcome = outcomeOf(code, value ?? 0);
  if (outcome === undefined || (outcome.kind !== 'ok' && !(expected as readonly string[]).includes(outcome.kind)))
    throw new ScriptCodeError(functionName, code);
  return outcome as Extract<ScriptOutcome, { kind: K | 'ok' }>;
}

function outcomeOf(code: number, value: number): ScriptOutcome | undefined {
  switch (code) {
    case ScriptCode.Ok:
      return { kind: 'ok', value };
    case ScriptCode.Short:
      return { kind: 'short', size: value };
    case ScriptCode.EpochChanged:
      return { kind: 'epoch_changed' };
    case ScriptCode.RateLimited:
      return { kind: 'rate_limited', retryAfterMs: value };
    case ScriptCode.Fenced:
      return { kind: 'fenced' };
    case ScriptCode.NotHolder:
      return { kind: 'not_holder' };
    default:
      return undefined;
  }
}

const COMMANDS_DIR = join(__dirname, 'commands');
const FUNCTION_FILE = /^([a-z_]+)-(\d+)\.lua$/;

function functionFiles(): string[] {
  return readdirSync(COMMANDS_DIR)
    .filter((f) => FUNCTION_FILE.test(f))
    .sort();
}

/** `idpool_<name>` → its number of keys, from the file names. */
const KEY_COUNTS: ReadonlyMap<string, number> = new Map(
  functionFiles().map((f) => {
    const [, name, keys] = FUNCTION_FILE.exec(f) ?? [];
    return [`idpool_${name}`, Number(keys)];
  }),
);

/** The number of keys function `name` takes (from its file name); throws for a function the library lacks. */
export function keyCount(name: string): number {
  const count = KEY_COUNTS.get(name);
  if (count === undefined) throw new Error(`no Redis function ${name} in ${COMMANDS_DIR}`);
  return count;
}

/** The FCALL arguments after `name`'s key count, its keys checked against the count its file name declares. */
function fcallArgs(name: string, keys: readonly string[], args: readonly (string | number)[]): (string | number)[] {
  const count = keyCount(name);
  if (keys.length !== count) throw new Error(`${name} takes ${count} keys, given ${keys.length}`);
  return [...keys, ...args];
}

/** The library's source: `_prelude.lua` followed by every function file. */
function functionLibrary(): string {
  return [
    readFileSync(join(COMMANDS_DIR, '_prelude.lua'), 'utf8'),
    ...functionFiles().map((f) => readFileSync(join(COMMANDS_DIR, f), 'utf8')),
  ].join('\n');
}

/**
 * Loads (or replaces) idpool's functions, the service's own and `idpool_pop`
 * for trusted consumers, on every master (a Cluster's too: a function runs
 * on the node that owns its keys; replicas get it by replication).
 */
export async function loadFunctions(redis: RedisClient): Promise<boolean> {
  const library = functionLibrary();
  const loaded = await Promise.all(
    mastersOf(redis).map(async (node) => {
      // Already loaded (another instance, an earlier start): nothing to write.
      // A server over maxmemory refuses FUNCTION LOAD, and must not stop an
      // instance from starting to serve what its pools hold.
      const listed = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'idpool', 'WITHCODE')) as unknown[][];
      const entry = listed.find((l) => l[1] === 'idpool');
      if (entry?.[entry.indexOf('library_code') + 1] === library) return false;
      await node.call('FUNCTION', 'LOAD', 'REPLACE', library);
      return true;
    }),
  );
  return loaded.includes(true);
}

/**
 * Runs `call` (an FCALL, or a MULTI of them), loading the library and
 * running it once more if the server lacks it (FUNCTION FLUSH, or a server
 * that came up empty): the library is ours to restore. Redis answers a
 * missing function with a bare `ERR`, the word every other script error
 * has too (classified a bug), so on such a refusal the library is loaded if
 * the server lacks it, and the call is made again when this load restored
 * it or the refusal was Redis's own "Function not found": after a restart
 * every instance's first calls fail at once, and all but the first to load
 * find the library back already (a retry refused only theirs before).
 */
export async function withLibrary<T>(redis: RedisClient, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (replyWord(err) !== 'ERR') throw err;
    const loaded = await loadFunctions(redis).catch(() => false);
    if (!loaded && !isMissingFunction(err)) throw err;
    return call();
  }
}

/** Redis's refusal of an FCALL whose function no loaded library defines (pinned by redis-take.test.ts). */
function isMissingFunction(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('ERR Function not found');
}

/** FCALL of one of idpool's functions (see {@link withLibrary}). */
export function callFunction<T>(
  redis: RedisClient,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<T> {
  const argv = fcallArgs(name, keys, args);
  return withLibrary(redis, async () => (await redis.fcall(name, keys.length, ...argv)) as T);
}

/** Queues an FCALL of `name` on a MULTI or pipeline (its caller wraps the exec in {@link withLibrary}). */
export function queueFunction(
  multi: ChainableCommander,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): ChainableCommander {
  const argv = fcallArgs(name, keys, args);
  return multi.fcall(name, keys.length, ...argv);
}
