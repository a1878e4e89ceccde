import pino from 'pino';
import { type Clock, systemClock, within } from './clock';
import { RepeatLimiter, withRepeated } from './repeat-limiter';
import { onAligned } from './schedule';

/** The logging surface idpool's components need (pino's shape, so pino plugs in directly). */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** `redact: []` skips redaction (lines with no secret); `foldInfo`: {@link RepeatedLines} folds info lines too. */
  child(bindings: object, options?: { redact?: string[]; foldInfo?: boolean }): Logger;
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
  if (!URL.canParse(url)) return '[unparseable url]';
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/** `text` with every URL's user-info, up to the word's last `@` (a malformed password too), replaced by `***`. */
export function maskUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>]*@/gi, '$1***@');
}

/** A log line's fields with URLs masked in its string values (one level: idpool logs flat objects). */
function maskFields(obj: unknown): unknown {
  if (!obj || typeof obj !== 'object') return typeof obj === 'string' ? maskUrls(obj) : obj;
  if (obj instanceof Error) return { err: maskUrls(obj.stack ?? obj.message) };
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, typeof v === 'string' ? maskUrls(v) : v]));
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
 * A {@link RepeatLimiter} (`sweep` it every second) of warn/error lines (info too under `foldInfo`: the request
 * log's 4xx): a distinct message (level, bindings, `msg`, `code`/`alarm`/`entityKey`, a request's
 * `method`/`route`/`status`) is written at once, then once a second with `repeated: N`.
 */
export class RepeatedLines extends RepeatLimiter<HeldLine> {
  constructor(clock: Pick<Clock, 'monotonic'>) {
    super(clock, {
      windowMs: 1000,
      // Distinct messages tracked: beyond them every count is written and the table starts over (bounded memory).
      maxKeys: 1000,
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
      child: (bindings, { foldInfo: childFolds, ...rest } = {}) =>
        this.wrap(inner.child(bindings, rest), `${scope}${JSON.stringify(bindings)}`, foldInfo || childFolds === true),
    };
  }

  private write(inner: Logger, scope: string, level: Folded, obj: object, msg?: string): void {
    const o = obj as Record<string, unknown>;
    // Objects all read alike here (as they did as '[object Object]'): the key tells messages apart, not values.
    const part = (v: unknown): string =>
      ['string', 'number', 'bigint', 'boolean'].includes(typeof v) ? String(v) : '';
    const key = `${level}\n${scope}\n${msg}\n${part(o.code)}\n${part(o.alarm)}\n${part(o.entityKey)}\n${part(o.method)} ${part(o.route)} ${part(o.status)}`;
    const held = this.admit(key, { logger: inner, level, obj, msg });
    if (held === undefined) return;
    inner[level](withRepeated(obj, held), msg);
  }
}

/** Bytes buffered while stdout does not keep up; beyond it lines are dropped rather than growing the heap. */
const MAX_BUFFER_BYTES = 16 * 1024 * 1024;
const WARN = 40;

/**
 * The service's logger on stdout, pino writing asynchronously. Info lines are batched up to 4 KB per write(2) (a
 * syscall per line cost ~50 µs per request, bench/request-log.bench.ts) and flushed at least once a second. The
 * redaction is a second line of defence: secrets are never passed to the logger.
 */
export function createProcessLogger(level: string, clock: { monotonic(): number }) {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, maxLength: MAX_BUFFER_BYTES });
  // Warn/error lines are flushed at the end of their turn, once however many: alarms reach the log at once.
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
  // Once a second, on the whole seconds the service's other loops wake on: lines flushed, repeats counted.
  onAligned(
    1000,
    () => {
      destination.flush();
      repeats.sweep();
    },
    () => clock.monotonic(),
  );
  return {
    log: repeats.wrap(root),
    flush: () => destination.flush(),
    /**
     * Writes held-back counts, the last line (`last`), then the buffer: asynchronously for at most `ms`, then
     * synchronously. The async write first because on a gone reader (EPIPE) it fails and stops logging, where
     * sonic-boom's flushSync (and pino's flush on exit) would retry forever.
     */
    flushBeforeExit: async (ms: number, last?: () => void): Promise<void> => {
      repeats.drain();
      last?.();
      await within(systemClock, new Promise<void>((resolve) => destination.flush(() => resolve())), ms, undefined);
      destination.flushSync();
    },
  };
}
