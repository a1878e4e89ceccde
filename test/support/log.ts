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

/**
 * The keys a JSON object's text names more than once at its top level (`JSON.parse` keeps the last
 * silently): pino writes a child's bindings after its parent's, so two loggers naming `component`
 * give a line two.
 */
export function repeatedTopLevelKeys(json: string): string[] {
  const seen = new Set<string>();
  const repeated: string[] = [];
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let end = i + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const text = json.slice(i, end + 1);
      // A key of the top-level object: a string at depth 1 followed by a colon.
      if (depth === 1 && /^\s*:/.test(json.slice(end + 1, end + 3))) {
        const key = JSON.parse(text) as string;
        if (seen.has(key)) repeated.push(key);
        seen.add(key);
      }
      i = end;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return repeated;
}
