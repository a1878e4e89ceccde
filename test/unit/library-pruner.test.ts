import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { OWN_LIBRARY, PUBLIC_LIBRARY, publicLibrarySource } from '../../src/redis/functions';
import { type LibraryUser, LibraryPruner } from '../../src/redis/library-pruner';
import { FakeClock } from '../support/clock';
import { recordingLog } from '../support/log';

/** The grace the service gives it (src/service/builders.ts): IDPOOL_INSTANCE_TTL_MS, 10 s by default. */
const GRACE_MS = 10_000;
/** The library of a release before this one, that this fleet ran. */
const OLD = 'idpool_0123456789ab';
/** The library of a release another deployment on the same Redis server runs (its own fleet, its own heartbeats). */
const OTHERS = 'idpool_fedcba987654';

/**
 * FUNCTION DELETE, LIST LIBRARYNAME and LOAD REPLACE over a map of library
 * → function names, answering as Redis 7 does (`ERR Library not found`
 * for a library that is not there); `refuse` makes every call fail with it.
 */
function fakeRedis(libraries: Record<string, string[]>) {
  const loaded = new Map(Object.entries(libraries));
  const calls: string[][] = [];
  return {
    loaded,
    calls,
    refuse: undefined as Error | undefined,
    async call(command: 'FUNCTION', sub: string, ...args: string[]): Promise<unknown> {
      calls.push([command, sub, ...args]);
      if (this.refuse) throw this.refuse;
      if (sub === 'DELETE') {
        if (!loaded.delete(args[0])) throw new ReplyError('ERR Library not found');
        return 'OK';
      }
      if (sub === 'LIST') {
        const functions = loaded.get(args[1]);
        const entry = ['library_name', args[1], 'engine', 'LUA', 'functions', functions?.map((f) => ['name', f])];
        return functions ? [entry] : [];
      }
      // LOAD REPLACE of the public library: the functions its source registers.
      const source = args[1];
      loaded.set(
        /^#!lua name=(\S+)/.exec(source)![1],
        [...source.matchAll(/'(idpool_[a-z_]+)'/g)].map((m) => m[1]),
      );
      return 'OK';
    },
  };
}

function setup(libraries: Record<string, string[]>) {
  const clock = new FakeClock();
  const redis = fakeRedis(libraries);
  const { log, lines } = recordingLog();
  const pruner = new LibraryPruner({ redis: redis as never, clock, log, graceMs: GRACE_MS });
  const deletes = () => redis.calls.filter((c) => c[1] === 'DELETE').map((c) => c[2]);
  return { clock, redis, lines, pruner, deletes };
}

const alive = (library?: string): LibraryUser => ({ state: 'alive', library });
const gone = (library?: string): LibraryUser => ({ state: 'gone', library });

describe('LibraryPruner: a release library removed once no alive instance of the fleet names it', () => {
  it('keeps a library an alive heartbeat names, however long', async () => {
    const { clock, redis, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    for (let i = 0; i < 10; i++) {
      await pruner.prune([alive(OWN_LIBRARY), alive(OLD)]);
      clock.advance(GRACE_MS);
    }
    expect(deletes()).toEqual([]);
    expect(redis.loaded.has(OLD)).toBe(true);
  });

  it('removes a library no alive heartbeat names once its grace has passed since that was first seen, not before', async () => {
    const { clock, redis, lines, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    await pruner.prune([alive(OWN_LIBRARY), alive(OLD)]);
    clock.advance(60_000);
    // Its last instance stopped: gone now, still listed.
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD)]);
    clock.advance(GRACE_MS - 1);
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD)]);
    expect(deletes()).toEqual([]);
    clock.advance(1);
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD)]);
    expect(deletes()).toEqual([OLD]);
    expect([...redis.loaded.keys()]).toEqual([OWN_LIBRARY]);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', obj: { library: OLD } }));
  });

  it('starts the grace again when an instance of that release is alive again (an old pod restarted mid-roll)', async () => {
    const { clock, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    await pruner.prune([gone(OLD)]);
    clock.advance(GRACE_MS - 1);
    await pruner.prune([alive(OLD)]);
    clock.advance(1);
    await pruner.prune([gone(OLD)]);
    clock.advance(GRACE_MS - 1);
    await pruner.prune([gone(OLD)]);
    expect(deletes()).toEqual([]);
    clock.advance(1);
    await pruner.prune([gone(OLD)]);
    expect(deletes()).toEqual([OLD]);
  });

  it("never removes a library no heartbeat of its fleet named: another deployment's on the same Redis", async () => {
    const { clock, redis, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [], [OTHERS]: [] });
    for (let i = 0; i < 10; i++) {
      await pruner.prune([alive(OWN_LIBRARY), gone(OLD)]);
      clock.advance(GRACE_MS);
    }
    // Its own old release's went; the other deployment's was never looked at.
    expect(deletes()).toEqual([OLD]);
    expect([...redis.loaded.keys()]).toEqual([OWN_LIBRARY, OTHERS]);
    expect(redis.calls.flat()).not.toContain(OTHERS);
  });

  it("never removes this release's own library, even with every heartbeat naming it gone or none at all", async () => {
    const { clock, redis, pruner, deletes } = setup({ [OWN_LIBRARY]: [] });
    for (let i = 0; i < 10; i++) {
      await pruner.prune(i % 2 ? [] : [gone(OWN_LIBRARY)]);
      clock.advance(GRACE_MS);
    }
    expect(deletes()).toEqual([]);
    expect(redis.loaded.has(OWN_LIBRARY)).toBe(true);
  });

  it('replaces the whole library of a release before versioned libraries by the public one: idpool_pop stays', async () => {
    // Such a release names no library in its heartbeat and calls `idpool` whole.
    const { clock, redis, pruner, deletes } = setup({
      [OWN_LIBRARY]: [],
      [PUBLIC_LIBRARY]: ['idpool_take', 'idpool_pop', 'idpool_push_open'],
    });
    await pruner.prune([alive(OWN_LIBRARY), gone()]);
    clock.advance(GRACE_MS);
    await pruner.prune([alive(OWN_LIBRARY), gone()]);
    expect(deletes()).toEqual([]);
    expect(redis.calls).toContainEqual(['FUNCTION', 'LOAD', 'REPLACE', publicLibrarySource()]);
    expect(redis.loaded.get(PUBLIC_LIBRARY)).toEqual(['idpool_pop']);
  });

  it('takes a library another instance of the fleet removed first as removed, with no warning', async () => {
    const { clock, redis, lines, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    await pruner.prune([gone(OLD)]);
    redis.loaded.delete(OLD);
    clock.advance(GRACE_MS);
    await pruner.prune([gone(OLD)]);
    expect(deletes()).toEqual([OLD]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('removes a library once while a gone heartbeat still names it (listed 30 TTLs), again if it comes back', async () => {
    const { clock, redis, lines, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    for (let i = 0; i <= 30; i++) {
      await pruner.prune([alive(OWN_LIBRARY), gone(OLD)]);
      clock.advance(GRACE_MS);
    }
    expect(deletes()).toEqual([OLD]);
    expect(lines.filter((l) => l.level !== 'info')).toEqual([]);
    // An instance of that release started again (a new heartbeat beside the gone one), loading its library: watched anew.
    redis.loaded.set(OLD, []);
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD), alive(OLD)]);
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD), gone(OLD)]);
    clock.advance(GRACE_MS);
    await pruner.prune([alive(OWN_LIBRARY), gone(OLD), gone(OLD)]);
    expect(deletes()).toEqual([OLD, OLD]);
    expect(redis.loaded.has(OLD)).toBe(false);
  });

  it('retries a removal Redis refused at each view, warning once a minute', async () => {
    const { clock, redis, lines, pruner, deletes } = setup({ [OWN_LIBRARY]: [], [OLD]: [] });
    redis.refuse = new ReplyError("NOPERM User idpool has no permissions to run the 'function|delete' command");
    await pruner.prune([gone(OLD)]);
    for (let i = 0; i < 6; i++) {
      clock.advance(GRACE_MS);
      await pruner.prune([gone(OLD)]);
    }
    expect(deletes()).toHaveLength(6);
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0].obj).toMatchObject({ library: OLD, err: expect.stringContaining('NOPERM') });
    // Allowed again (an ACL fixed): removed at the next view.
    redis.refuse = undefined;
    clock.advance(GRACE_MS);
    await pruner.prune([gone(OLD)]);
    expect(redis.loaded.has(OLD)).toBe(false);
  });
});
