import pino from 'pino';
import type { Clock } from './clock';
import { RepeatLimiter, withRepeated } from './repeat-limiter';
import { onAligned } from './schedule';

/** The logging surface idpool's components need (pino's shape, so pino plugs in directly). */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /**
   * `redact: []` drops the redaction pass for lines that never carry a
   * secret (pino's child option). `foldInfo` asks {@link RepeatedLines}
   * to fold the child's repeated info lines too; other loggers ignore it.
   */
  child(bindings: object, options?: ChildOptions): Logger;
}

export interface ChildOptions {
  redact?: string[];
  foldInfo?: boolean;
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};

/** A connection URL for logs: its password (and a user's) replaced, so `redis://:secret@host` never reaches a log. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable url]';
  }
}

/**
 * `text` with the credentials of every URL in it replaced by `***`: the
 * whole user-info part up to the last `@` of the word, so a malformed URL
 * (an unescaped `@` or `/` in its password) is masked too.
 */
export function maskUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>]*@/gi, '$1***@');
}

/** A log line's fields with URLs masked in its string values (one level: idpool logs flat objects). */
function maskFields(obj: unknown): unknown {
  if (!obj || typeof obj !== 'object') return typeof obj === 'string' ? maskUrls(obj) : obj;
  if (obj instanceof Error) return { err: maskUrls(obj.stack ?? obj.message) };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = typeof v === 'string' ? maskUrls(v) : v;
  return out;
}

type Folded = 'info' | 'warn' | 'error';

/** A line held back: written with its count when its key falls silent. */
interface HeldLine {
  logger: Logger;
  level: Folded;
  obj: object;
  msg: string | undefined;
}

/**
 * Folds repeated warn/error lines through one {@link RepeatLimiter}: a
 * distinct message (level, logger bindings, `msg`, and
 * `code`/`alarm`/`entityKey`, or a request line's `method`/`route`/`status`)
 * is written at once, then at most once per `windowMs`, with `repeated: N`
 * (how many were held back since the last one written); {@link tick} writes
 * the count of a message that fell silent. During an outage every failing
 * request logs the same few lines; this keeps that to a few lines a second.
 * A child asked with `foldInfo` folds its info lines the same way (the
 * request log's 4xx lines: a client retrying a 429 at once, or a fleet with
 * a stale secret).
 */
export class RepeatedLines {
  private readonly limiter: RepeatLimiter<HeldLine>;

  constructor(
    clock: Pick<Clock, 'monotonic'>,
    windowMs = 1000,
    /** Distinct messages tracked; beyond it every count is written and the table starts over (bounded memory). */
    maxMessages = 1000,
  ) {
    this.limiter = new RepeatLimiter(clock, {
      windowMs,
      maxKeys: maxMessages,
      heldBack: (line, count) => line.logger[line.level]({ ...line.obj, repeated: count }, line.msg),
    });
  }

  /** A logger whose warn/error lines (and info lines, with `foldInfo`) are folded; debug passes straight through. */
  wrap(inner: Logger, scope = '', foldInfo = false): Logger {
    return {
      debug: (obj, msg) => inner.debug(obj, msg),
      info: foldInfo ? (obj, msg) => this.write(inner, scope, 'info', obj, msg) : (obj, msg) => inner.info(obj, msg),
      warn: (obj, msg) => this.write(inner, scope, 'warn', obj, msg),
      error: (obj, msg) => this.write(inner, scope, 'error', obj, msg),
      child: (bindings, options) => {
        const { foldInfo: childFolds, ...rest } = options ?? {};
        return this.wrap(
          inner.child(bindings, rest),
          `${scope}${JSON.stringify(bindings)}`,
          foldInfo || childFolds === true,
        );
      },
    };
  }

  /** Writes the counts of messages silent for a whole window. Run every `windowMs`. */
  tick(): void {
    this.limiter.sweep();
  }

  /** Writes every held-back count now (shutdown). */
  flush(): void {
    this.limiter.drain();
  }

  private write(inner: Logger, scope: string, level: Folded, obj: object, msg?: string): void {
    const o = obj as Record<string, unknown>;
    // Objects all read alike here (as they did as '[object Object]'): the key tells messages apart, not values.
    const part = (v: unknown): string =>
      typeof v === 'string'
        ? v
        : typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean'
          ? v.toString()
          : '';
    const key = `${level}\n${scope}\n${msg}\n${part(o.code)}\n${part(o.alarm)}\n${part(o.entityKey)}\n${part(o.method)} ${part(o.route)} ${part(o.status)}`;
    const held = this.limiter.admit(key, { logger: inner, level, obj, msg });
    if (held === undefined) return;
    inner[level](withRepeated(obj, held), msg);
  }
}

/** Bytes buffered while stdout does not keep up; beyond it lines are dropped rather than growing the heap. */
const MAX_BUFFER_BYTES = 16 * 1024 * 1024;
const WARN = 40;

export interface ProcessLogger {
  readonly log: Logger;
  /**
   * Writes held-back counts, then the process's last line (`last`, which
   * logs it: so no count follows it), and everything buffered, then resolves
   * (before exit): asynchronously first, for at most `ms`, then synchronously
   * whatever is left. A reader that is gone (EPIPE) fails the first write,
   * and logging stops; the synchronous write alone would retry it forever
   * (sonic-boom's flushSync retries every error but EAGAIN's bound), and
   * so would pino's own flush on exit.
   */
  flushBeforeExit: (ms: number, last?: () => void) => Promise<void>;
  /** Starts writing what is buffered (the start-up line that supervisors wait for). */
  flush: () => void;
}

/**
 * The service's logger on stdout: pino with asynchronous writes. Info lines
 * (one per request) are batched up to 4 KB per write(2): one syscall per
 * line cost the single-id route ~50 µs of CPU per request
 * (bench/request-log.bench.ts); they are flushed at least once a second.
 * Warnings and errors are flushed at the end of the event-loop turn, one
 * flush for however many that turn wrote, and repeated ones are counted
 * ({@link RepeatedLines}). The buffer is bounded ({@link MAX_BUFFER_BYTES}).
 * Tokens and secrets are never passed to the logger; the redaction is a
 * second line of defence.
 */
export function createProcessLogger(level: string, clock: { monotonic(): number }): ProcessLogger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, maxLength: MAX_BUFFER_BYTES });
  // One flush at the end of the event-loop turn, however many warn/error
  // lines that turn wrote: alarms reach the log at once, without a write(2)
  // per line.
  let pending = false;
  const soon = () => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      destination.flush();
    });
  };
  const root = pino(
    {
      hooks: {
        logMethod(args, method, lineLevel) {
          if (lineLevel < WARN) {
            method.apply(this, args);
            return;
          }
          // Errors quote drivers, which quote connection URLs: never with their passwords.
          method.apply(this, args.map(maskFields) as typeof args);
          soon();
        },
      },
      level,
      base: { service: 'idpool' },
      redact: {
        paths: ['authorization', 'secret', 'token', 'adminToken', '*.authorization', '*.secret', '*.token'],
        censor: '[redacted]',
      },
    },
    destination,
  );
  const repeats = new RepeatedLines(clock);
  // Once a second, on the whole seconds the service's other loops wake on (schedule.ts):
  // the batched lines flushed, the repeats counted.
  onAligned(
    1000,
    () => {
      destination.flush();
      repeats.tick();
    },
    () => clock.monotonic(),
  );
  return {
    log: repeats.wrap(root),
    flush: () => destination.flush(),
    async flushBeforeExit(ms, last) {
      repeats.flush();
      last?.();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        destination.flush(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      destination.flushSync();
    },
  };
}
