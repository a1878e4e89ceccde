import type { Logger } from '../../src/logger';

interface LoggedLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  /** The line's fields, its logger's bindings first. */
  obj: Record<string, unknown>;
  msg?: string;
}

/** A {@link Logger} that keeps every line it is given, children's too (with their bindings). */
export function recordingLog(): { log: Logger; lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const make = (bindings: object): Logger => {
    const at =
      (level: LoggedLine['level']) =>
      (obj: object, msg?: string): void =>
        void lines.push({ level, obj: { ...bindings, ...obj }, msg });
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return { log: make({}), lines };
}
