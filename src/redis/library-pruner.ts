import type { Clock } from '../clock';
import { errorMessage } from '../errors';
import type { Logger } from '../logger';
import { RepeatLimiter } from '../repeat-limiter';
import { OWN_LIBRARY, PUBLIC_LIBRARY, listLibraries, publicLibrarySource } from './functions';
import { type RedisClient, mastersOf } from './connection';

/** An instance of the fleet as the pruner sees it: alive or gone, and the library it calls. */
export interface LibraryUser {
  readonly state: 'alive' | 'gone';
  /** Its own library (`idpool_<hash>`); undefined for a release before versioned libraries, which calls {@link PUBLIC_LIBRARY} whole. */
  readonly library?: string | null;
}

/** A failed removal (an ACL without FUNCTION DELETE, Redis away) is logged once a minute. */
const FAILURE_LOG_MS = 60_000;

/**
 * Removes the function libraries of releases this fleet no longer runs (docs/operating.md "Rolling
 * upgrades"): only one a heartbeat of this fleet named (another deployment may share the server) and no
 * alive one has for `graceMs`; one still called costs its caller a reload (`withLibrary`). A pre-versioned
 * `idpool` (defining `idpool_take`) is cut to the public functions.
 */
export class LibraryPruner {
  /** Libraries a heartbeat of this fleet named, and since when no alive one has. */
  private readonly unusedSince = new Map<string, number | undefined>();
  /** Removed, still named by a gone instance's heartbeat (listed 30 TTLs): not deleted again at every grace. */
  private readonly removed = new Set<string>();
  private readonly failures: RepeatLimiter;

  constructor(private readonly options: { redis: RedisClient; clock: Clock; log: Logger; graceMs: number }) {
    this.failures = new RepeatLimiter(options.clock, { windowMs: FAILURE_LOG_MS, maxKeys: 1 });
  }

  /** Called with each fleet view read from Redis. */
  async prune(instances: readonly LibraryUser[]): Promise<void> {
    const now = this.options.clock.now();
    const alive = new Set([OWN_LIBRARY]);
    const named = new Set<string>();
    for (const i of instances) {
      const library = i.library ?? PUBLIC_LIBRARY;
      named.add(library);
      if (i.state === 'alive') alive.add(library);
    }
    for (const library of this.removed)
      // Alive again (an instance of that release started, loading it anew), or no longer listed.
      if (alive.has(library) || !named.has(library)) this.removed.delete(library);
    for (const library of named)
      if (!this.removed.has(library) && !this.unusedSince.has(library)) this.unusedSince.set(library, undefined);
    for (const [library, since] of this.unusedSince) {
      if (alive.has(library)) this.unusedSince.set(library, undefined);
      else if (since === undefined) this.unusedSince.set(library, now);
      else if (now - since >= this.options.graceMs) {
        try {
          await this.remove(library);
          this.unusedSince.delete(library);
          this.removed.add(library);
        } catch (err) {
          if (this.failures.admit('prune') !== undefined)
            this.options.log.warn(
              { err: errorMessage(err), library },
              'could not remove an unused Redis function library',
            );
        }
      }
    }
  }

  private async remove(library: string): Promise<void> {
    for (const node of mastersOf(this.options.redis)) {
      if (library === PUBLIC_LIBRARY) {
        const whole = (await listLibraries(node, PUBLIC_LIBRARY)).find((l) => l.name === PUBLIC_LIBRARY);
        if (!whole?.functions.includes('idpool_take')) continue;
        await node.call('FUNCTION', 'LOAD', 'REPLACE', publicLibrarySource());
      } else {
        await node.call('FUNCTION', 'DELETE', library).catch(async (err: unknown) => {
          // Removed already (another instance of the fleet pruned it first): Redis's
          // only code for that is ERR, so the library list decides, not the message.
          const listed = await listLibraries(node, library);
          if (listed.some((l) => l.name === library)) throw err;
        });
      }
    }
    this.options.log.info({ library }, 'removed the Redis functions of a release no instance runs any more');
  }
}
