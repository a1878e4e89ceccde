import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainableCommander } from 'ioredis';
import { type RedisClient, mastersOf } from './connection';
import { classifyRedisError, isUnknownCommand, replyWord } from './errors';
import { serverRelease } from './info';
import { RedisUnsupportedError } from './start-error';
import type { RedisTopology } from './topology';

// idpool's Redis functions: `commands/_prelude.lua` and one `<name>-<numKeys>.lua` each, registering
// `idpool_<name>`. Every call goes through here, so the key count comes from the file name, FCALL names this
// release's function, and a result code means one thing everywhere.

/** What a function's result code and the number beside it mean. */
export type ScriptOutcome =
  | { readonly kind: 'ok'; readonly value: number }
  | { readonly kind: 'short'; readonly size: number }
  | { readonly kind: 'epoch_changed' }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number }
  | { readonly kind: 'fenced' }
  | { readonly kind: 'not_holder' }
  | { readonly kind: 'period_stale' }
  | { readonly kind: 'period_over' };

/** A function answered a code its caller does not expect: the library and this process disagree (a bug). */
export class ScriptCodeError extends Error {
  constructor(functionName: string, resultCode: number) {
    super(`${functionName} returned unknown code ${resultCode}`);
    this.name = 'ScriptCodeError';
  }
}

/** The one map from a result code to its meaning; a refusal not in `expected` (the Lua header's Output) is a {@link ScriptCodeError}. */
export function scriptOutcome<K extends ScriptOutcome['kind']>(
  functionName: string,
  code: number,
  value: number | undefined,
  expected: readonly K[],
): Extract<ScriptOutcome, { kind: K | 'ok' }> {
  const outcome = Object.hasOwn(OUTCOMES, code) ? OUTCOMES[code](value ?? 0) : undefined;
  if (outcome === undefined || (outcome.kind !== 'ok' && !(expected as readonly string[]).includes(outcome.kind)))
    throw new ScriptCodeError(functionName, code);
  return outcome as Extract<ScriptOutcome, { kind: K | 'ok' }>;
}

/** Each return code of the Lua functions (negative = refused; each file's header says which it returns) as its outcome. */
const OUTCOMES: Readonly<Record<number, (value: number) => ScriptOutcome>> = {
  0: (value) => ({ kind: 'ok', value }),
  [-1]: (size) => ({ kind: 'short', size }),
  [-2]: () => ({ kind: 'epoch_changed' }),
  [-3]: (retryAfterMs) => ({ kind: 'rate_limited', retryAfterMs }),
  [-4]: () => ({ kind: 'fenced' }),
  [-5]: () => ({ kind: 'not_holder' }),
  [-8]: () => ({ kind: 'period_stale' }),
  [-9]: () => ({ kind: 'period_over' }),
};

const COMMANDS_DIR = join(__dirname, 'commands');
/** `<name>-<numKeys>.lua`, or `<name>-n.lua` for a function that takes any number of keys (its caller's). */
const FUNCTION_FILE = /^([a-z_]+)-(\d+|n)\.lua$/;
/** `redis.register_function('idpool_x', …)` or `redis.register_function{function_name = 'idpool_x', …}`. */
const REGISTERED = /(redis\.register_function\s*(?:\(\s*|\{\s*function_name\s*=\s*))'idpool_([a-z_]+)'/g;

/**
 * Functions direct consumers call by name, never changed, in {@link PUBLIC_LIBRARY} every release shares
 * (docs/operating.md "Rolling upgrades"). Never add one: that would replace the `idpool` library under an
 * older release still calling it; a new public function needs a library of its own, never replaced.
 */
const PUBLIC_FUNCTIONS: ReadonlySet<string> = new Set(['pop']);

/** The library holding the public functions; before versioned libraries, the one library of every release. */
export const PUBLIC_LIBRARY = 'idpool';

function functionFiles() {
  return readdirSync(COMMANDS_DIR)
    .filter((f) => FUNCTION_FILE.test(f))
    .sort()
    .map((f) => {
      const [, name, keys] = FUNCTION_FILE.exec(f) ?? [];
      const source = readFileSync(join(COMMANDS_DIR, f), 'utf8');
      const registered = [...source.matchAll(REGISTERED)].map((m) => m[2]);
      if (registered.length !== 1 || registered[0] !== name)
        throw new Error(
          `${f} must register the one function idpool_${name}, registers ${registered.join(', ') || 'none'}`,
        );
      return {
        name: `idpool_${name}`,
        keys: keys === 'n' ? ('any' as const) : Number(keys),
        source,
        public: PUBLIC_FUNCTIONS.has(name),
      };
    });
}

/**
 * The two libraries of this release: the service's own, it and its functions named by a hash of its source
 * (`idpool_<hash>_take`), so a release changing any function never replaces the previous one's while both
 * run (docs/operating.md "Rolling upgrades"); and the public one, whose names stay.
 */
function buildLibraries() {
  const prelude = readFileSync(join(COMMANDS_DIR, '_prelude.lua'), 'utf8');
  const files = functionFiles();
  const ownFiles = files.filter((f) => !f.public);
  const body = [prelude, ...ownFiles.map((f) => f.source)].join('\n');
  const version = `idpool_${createHash('sha256').update(body).digest('hex').slice(0, 12)}`;
  const own = [
    `#!lua name=${version}`,
    prelude,
    ...ownFiles.map((f) => f.source.replace(REGISTERED, `$1'${version}_$2'`)),
  ].join('\n');
  const shared = [`#!lua name=${PUBLIC_LIBRARY}`, prelude, ...files.filter((f) => f.public).map((f) => f.source)];
  return { version, own, public: shared.join('\n'), files };
}

const LIBRARIES = buildLibraries();

/** The name of this release's own library (`idpool_<hash>`): its heartbeat names it, so the fleet knows which are in use. */
export const OWN_LIBRARY = LIBRARIES.version;

const KEY_COUNTS: ReadonlyMap<string, number | 'any'> = new Map(LIBRARIES.files.map((f) => [f.name, f.keys]));
/** The public functions, all in the `idpool` library. */
const PUBLIC_NAMES: ReadonlySet<string> = new Set(LIBRARIES.files.filter((f) => f.public).map((f) => f.name));

/** The number of keys function `name` takes (from its file name; `any` for `-n`); throws for a function the library lacks. */
export function keyCount(name: string): number | 'any' {
  const count = KEY_COUNTS.get(name);
  if (count === undefined) throw new Error(`no Redis function ${name} in ${COMMANDS_DIR}`);
  return count;
}

/** What FCALL names function `name` (`idpool_take`) of this release: `idpool_<hash>_take`; a public one, its own name. */
export function registeredName(name: string): string {
  keyCount(name);
  return PUBLIC_NAMES.has(name) ? name : `${OWN_LIBRARY}_${name.slice('idpool_'.length)}`;
}

/** FCALL's arguments for `name` of this release, its keys checked against the count its file name declares. */
function fcallArgs(name: string, keys: readonly string[], args: readonly (string | number)[]) {
  const count = keyCount(name);
  if (count !== 'any' && keys.length !== count) throw new Error(`${name} takes ${count} keys, given ${keys.length}`);
  return [registeredName(name), keys.length, ...keys, ...args] as const;
}

/** FUNCTION LIST's reply: each library's name and functions. */
export async function listLibraries(node: RedisClient, pattern: string) {
  const listed = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', pattern)) as unknown[][];
  const field = (entry: unknown[], name: string) => entry[entry.indexOf(name) + 1];
  return listed.map((entry) => ({
    name: field(entry, 'library_name') as string,
    functions: (field(entry, 'functions') as unknown[][]).map((f) => field(f, 'name') as string),
  }));
}

/**
 * Loads this release's functions on every master (replicas get them by replication): its own library unless
 * there, the public one unless the library there already defines every public function. Never replaces
 * another release's library. True when it loaded one.
 */
export async function loadFunctions(redis: RedisClient): Promise<boolean> {
  const loaded = await Promise.all(
    mastersOf(redis).map(async (node) => {
      // Already loaded: nothing to write (a server over maxmemory refuses FUNCTION LOAD, and must not stop an
      // instance from serving what its pools hold).
      const [own, shared] = await Promise.all([listLibraries(node, OWN_LIBRARY), listLibraries(node, PUBLIC_LIBRARY)]);
      const wrote = own.length === 0 && (await loadOnce(node, LIBRARIES.own));
      if (shared.length > 0 && [...PUBLIC_NAMES].every((f) => shared[0].functions.includes(f))) return wrote;
      await node.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARIES.public);
      return true;
    }),
  );
  return loaded.includes(true);
}

/** {@link loadFunctions} at start-up: a server without Redis Functions refused in one line naming it ({@link RedisUnsupportedError}). */
export async function loadFunctionsAtStart(redis: RedisClient, topology: RedisTopology): Promise<void> {
  try {
    await loadFunctions(redis);
  } catch (err) {
    if (!isUnknownCommand(err)) throw err;
    const info = await redis.info('server').catch(() => '');
    throw new RedisUnsupportedError(topology, serverRelease(info));
  }
}

/** FUNCTION LOAD of a library named by its content: another instance loading it at the same moment is no failure. */
async function loadOnce(node: RedisClient, source: string): Promise<boolean> {
  try {
    await node.call('FUNCTION', 'LOAD', source);
    return true;
  } catch (err) {
    if (err instanceof Error && err.message.includes('already exists')) return false;
    throw err;
  }
}

/** The public library of this release alone: what replaces a release's whole library once none of its instances runs. */
export function publicLibrarySource(): string {
  return LIBRARIES.public;
}

/**
 * Runs `call` (an FCALL, or a MULTI of them); on a bare `ERR` (a missing function's word, and every script
 * error's) loads the library if the server lacks it (FUNCTION FLUSH, a server come up empty), and calls again
 * when this load restored it or the refusal was "Function not found": after a restart every instance's first
 * calls fail at once, and all but the first to load find the library back already.
 */
export async function withLibrary<T>(redis: RedisClient, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (replyWord(err) !== 'ERR') throw err;
    const loaded = await loadFunctions(redis).catch(() => false);
    if (!loaded && !(err instanceof Error && classifyRedisError(err)?.kind === 'missing_function')) throw err;
    return call();
  }
}

/** FCALL of one of idpool's functions (see {@link withLibrary}). */
export function callFunction<T>(
  redis: RedisClient,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<T> {
  const argv = fcallArgs(name, keys, args);
  return withLibrary(redis, async () => (await redis.fcall(...argv)) as T);
}

/** Queues an FCALL of `name` on a MULTI or pipeline (its caller wraps the exec in {@link withLibrary}). */
export function queueFunction(
  multi: ChainableCommander,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): ChainableCommander {
  return multi.fcall(...fcallArgs(name, keys, args));
}
