import Redis, { Cluster, type Command, ReplyError } from 'ioredis';
import { type Classifier, type Failure, failure, systemFailure } from '../failure';

/** The first word of a Redis error reply, which Redis keeps stable (the rest is for people). */
const REPLIES: Record<string, Failure> = {
  READONLY: failure('unavailable', 'read_only', 'READONLY'), // a replica
  NOREPLICAS: failure('unavailable', 'read_only', 'NOREPLICAS'), // min-replicas-to-write unmet
  MASTERDOWN: failure('unavailable', 'no_master', 'MASTERDOWN'), // a replica with replica-serve-stale-data no and its master gone
  LOADING: failure('unavailable', 'loading', 'LOADING'), // still loading its data set
  CLUSTERDOWN: failure('unavailable', 'cluster_down', 'CLUSTERDOWN'), // a slot uncovered
  MOVED: failure('unavailable', 'moved', 'MOVED'), // ioredis follows these; one that reaches us ran out of redirections
  ASK: failure('unavailable', 'moved', 'ASK'),
  TRYAGAIN: failure('busy', 'moved', 'TRYAGAIN'), // a slot being migrated
  OOM: failure('unavailable', 'out_of_memory', 'OOM'), // over maxmemory under noeviction
  MISCONF: failure('unavailable', 'disk', 'MISCONF'), // failing to persist
  BUSY: failure('busy', 'script_busy', 'BUSY'), // a long script or function is running
  NOSCRIPT: failure('unavailable', 'missing_script', 'NOSCRIPT'), // the server lost its scripts (a restart, SCRIPT FLUSH)
  NOAUTH: failure('unavailable', 'auth', 'NOAUTH'),
  WRONGPASS: failure('unavailable', 'auth', 'WRONGPASS'),
  NOPERM: failure('unavailable', 'auth', 'NOPERM'),
  BUSYKEY: failure('conflict', 'duplicate', 'BUSYKEY'),
};

/** ioredis's own failures are plain Errors without a code: marked as a command is rejected, a timeout while connected, else lost. */
const REDIS_FAILURE = Symbol('idpool.redisFailure');

function mark(err: unknown, connected: boolean, cause?: unknown): void {
  if (!(err instanceof Error) || err instanceof ReplyError || err instanceof TypeError) return;
  Object.defineProperty(err, REDIS_FAILURE, { value: connected ? 'timeout' : 'lost', configurable: true });
  if (cause !== undefined && err.cause === undefined)
    Object.defineProperty(err, 'cause', { value: cause, configurable: true });
}

/** Errors ioredis raises as classes of its own (redis-errors' AbortError and below). */
const IOREDIS_CLASSES: Record<string, Failure> = {
  MaxRetriesPerRequestError: failure('unavailable', 'lost'),
  AbortError: failure('unavailable', 'lost'),
  ClusterAllFailedError: failure('unavailable', 'cluster_down'),
  ParserError: failure('unavailable', 'lost'),
};

/**
 * An FCALL of a function no loaded library defines: a bare `ERR`, as every script error, so told by its text,
 * here only (pinned by redis-take.test.ts); a bug to a caller, whom `withLibrary` spares it by loading the library.
 */
const MISSING_FUNCTION = failure('bug', 'missing_function', 'ERR');

/** What an error from ioredis means; undefined when ioredis did not raise it. */
export const classifyRedisError: Classifier = (err) => {
  const word = replyWord(err);
  if (word === 'ERR' && (err as Error).message.startsWith('ERR Function not found')) return MISSING_FUNCTION;
  if (word !== undefined) return Object.hasOwn(REPLIES, word) ? REPLIES[word] : failure('bug', 'other', word);
  if (err instanceof Error && Object.hasOwn(IOREDIS_CLASSES, err.name)) return IOREDIS_CLASSES[err.name];
  const known = (err as Partial<Record<typeof REDIS_FAILURE, 'timeout' | 'lost'>>)[REDIS_FAILURE];
  return known && (systemFailure(err) ?? failure('unavailable', known));
};

/** A command the server does not know (FUNCTION before Redis 7.0, on Dragonfly, renamed away): a bare `ERR` told by its text (redis-support.test.ts). */
export function isUnknownCommand(err: unknown): boolean {
  return replyWord(err) === 'ERR' && /^ERR unknown command\b/i.test((err as Error).message);
}

/** The first word of a Redis error reply (`OOM`, `READONLY`, `ERR`, …), or undefined when `err` is not one. */
export function replyWord(err: unknown): string | undefined {
  return err instanceof ReplyError ? (err as Error).message.split(' ', 1)[0] : undefined;
}

/** Makes every command's rejection carry {@link REDIS_FAILURE} when ioredis raised it itself. */
function markFailures(command: Command, connected: () => boolean): void {
  const reject = command.reject;
  command.reject = (err: Error) => {
    mark(err, connected());
    reject(err);
  };
}

/** ioredis for one server or Sentinel, its own failures marked (see {@link classifyRedisError}). */
export class MarkedRedis extends Redis {
  /** The socket's last error (ECONNREFUSED, …): ioredis emits it and rejects a failed connect with a plain "Connection is closed.". */
  private lastSocketError: unknown;
  private watching = false;

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    markFailures(command, () => this.status === 'ready');
    return super.sendCommand(command, stream);
  }

  override connect(callback?: Parameters<Redis['connect']>[0]): Promise<void> {
    if (!this.watching) {
      this.watching = true;
      this.on('error', (err: unknown) => (this.lastSocketError = err));
    }
    return super.connect(callback).catch((err: unknown) => {
      mark(err, false, this.lastSocketError);
      throw err;
    });
  }
}

/** ioredis for a Cluster, its own failures marked; a command that ran out of redirections keeps the last node's reply as `lastNodeError`. */
export class MarkedCluster extends Cluster {
  override sendCommand(command: Command, stream?: Parameters<Cluster['sendCommand']>[1], node?: unknown): unknown {
    markFailures(command, () => this.status === 'ready');
    return super.sendCommand(command, stream, node);
  }

  override connect(): Promise<void> {
    return super.connect().catch((err: unknown) => {
      mark(err, false);
      throw err;
    });
  }

  override handleError(error: Error, ttl: { value?: unknown }, handlers: Record<string, (e: Error) => void>): void {
    const gaveUp = handlers.maxRedirections;
    super.handleError(error, ttl, {
      ...handlers,
      maxRedirections: (redirection: Error) => gaveUp(Object.assign(redirection, { lastNodeError: error })),
    });
  }
}
