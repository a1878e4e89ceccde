import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * What an `idpool` command loads before it runs: the static imports
 * reachable from the entry points (a dynamic `import()` loads later, when
 * taken). The service, Redis, HTTP and SQL drivers stay out, so a command
 * costs ~0.1 s of CPU and a refused configuration ~0.15 s (the suite starts
 * a few hundred of each).
 */
const SRC = resolve(__dirname, '../../src');

function resolveTs(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')])
    if (statSync(candidate, { throwIfNoEntry: false })?.isFile()) return candidate;
  return undefined;
}

/** Packages loaded at start-up from `entry`, and the src file that first imports each. */
function staticPackages(entry: string): Map<string, string> {
  const packages = new Map<string, string>();
  const seen = new Set<string>();
  const queue = [join(SRC, entry)];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // `import x from 'm'`, `import { a } from 'm'`, `export … from 'm'`, `import 'm'`; not `import type`, not `import('m')`.
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?'([^']+)';/gm)) {
      const spec = m[1];
      if (spec.startsWith('.')) {
        const target = resolveTs(file, spec);
        if (target) queue.push(target);
      } else if (!spec.startsWith('node:')) {
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        if (!packages.has(name)) packages.set(name, file.slice(SRC.length + 1));
      }
    }
  }
  return packages;
}

const HEAVY = ['ioredis', 'typeorm', 'express', 'mysql2', 'pg', 'better-sqlite3', 'prom-client'];

describe('what starts before a command runs', () => {
  it.each([
    // The process logger (pino) too: `main.ts` needs it before it builds anything.
    ['cli/index.ts', ['commander', 'zod'], [...HEAVY, 'pino']],
    ['main.ts', ['zod', 'pino'], HEAVY],
  ])('%s loads %j, none of the service, Redis, HTTP or SQL packages', (entry, needed, heavy) => {
    const loaded = staticPackages(entry);
    expect(Object.fromEntries(heavy.filter((p) => loaded.has(p)).map((p) => [p, loaded.get(p)]))).toEqual({});
    // The walk reaches what the entry does need (a walk that found nothing would pass the line above).
    for (const p of needed) expect(loaded.has(p), p).toBe(true);
  });
});
