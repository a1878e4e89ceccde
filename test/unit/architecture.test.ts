import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * ARCHITECTURE.md's folder map, checked against the imports of src/: the
 * block under "## Folders" lists folders (and shared files) top to bottom,
 * and "dependencies point one way, top to bottom". So a folder may import
 * only what is listed on its own line or below it, a line that says
 * "standalone" imports nothing of src/, and no two folders import each
 * other, directly or round a cycle. Within a folder, no two files do either.
 */
const ROOT = resolve(__dirname, '../..');
const SRC = join(ROOT, 'src');

/** The folder map: each line's entries (`cli`, `main.ts`), top line first, and what each line says. */
function folderMap(): { entries: string[]; says: string }[] {
  const doc = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Folders'));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('ARCHITECTURE.md has no code block under "## Folders"');
  return block
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      // Entries, then two or more spaces, then what the line says.
      const [, names, says] = /^(\S.*?)\s{2,}(.*)$/.exec(line) ?? [];
      if (!names) throw new Error(`ARCHITECTURE.md folder line without a description: ${line}`);
      return { entries: names.split(',').map((n) => n.trim().replace(/\/$/, '')), says };
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level entry of src/ a path belongs to: its folder, or the file itself. */
function entryOf(path: string): string | undefined {
  const rel = relative(SRC, path);
  if (rel.startsWith('..')) return undefined;
  const [first, ...rest] = rel.split('/');
  if (rest.length > 0) return first;
  // `./service` names a folder (its index.ts), `./limits` a file.
  return statSync(join(SRC, first), { throwIfNoEntry: false })?.isDirectory()
    ? first
    : first.endsWith('.ts')
      ? first
      : `${first}.ts`;
}

/** Every import between two entries of src/: from → to → one file that does it. */
function importGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(SRC)) {
    const from = entryOf(file)!;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s+|\bimport\s*\(\s*|\brequire\s*\(\s*)'(\.[^']*)'/g)) {
      const to = entryOf(resolve(dirname(file), m[1]));
      if (!to || to === from) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, relative(ROOT, file));
    }
  }
  return graph;
}

/** The file an import of `spec` from `file` loads: `x.ts`, or `x/index.ts` for a folder. */
function resolveImport(file: string, spec: string): string | undefined {
  const base = resolve(dirname(file), spec);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    if (candidate.endsWith('.ts') && statSync(candidate, { throwIfNoEntry: false })?.isFile()) return candidate;
  }
  return undefined;
}

/**
 * Every import between two files of src/, type-only ones included: a cycle
 * of types alone costs nothing at run time, but it still means neither file
 * can be read (or moved) without the other, which is what this test guards.
 */
function fileGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const targets = new Set<string>();
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s+|\bimport\s*\(\s*|\brequire\s*\(\s*)'(\.[^']*)'/g)) {
      const to = resolveImport(file, m[1]);
      if (to && to !== file) targets.add(to);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Groups of files that import each other round a cycle (Tarjan's strongly connected components of more than one file). */
function fileCycles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      group.push(relative(SRC, member));
      if (member === node) break;
    }
    if (group.length > 1) groups.push(group.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return groups;
}

describe('ARCHITECTURE.md folder claims hold for src/', () => {
  const map = folderMap();
  const graph = importGraph();
  const rank = new Map<string, number>();
  map.forEach((line, i) => line.entries.forEach((entry) => rank.set(entry, i)));

  it('lists every folder and top-level file of src/, and nothing that is not there', () => {
    const present = new Set(readdirSync(SRC).filter((n) => !n.endsWith('.d.ts')));
    expect([...present].filter((n) => !rank.has(n)).sort()).toEqual([]);
    expect([...rank.keys()].filter((n) => !present.has(n)).sort()).toEqual([]);
  });

  it('no folder imports one listed above it', () => {
    const upward: string[] = [];
    for (const [from, targets] of graph) {
      for (const [to, file] of targets) {
        if (rank.get(to)! < rank.get(from)!) upward.push(`${from} -> ${to} (${file})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('a line that says "standalone" imports nothing of src/', () => {
    const standalone = map.filter((line) => /\bstandalone\b/.test(line.says)).flatMap((line) => line.entries);
    expect(standalone.length).toBeGreaterThan(0);
    expect(
      standalone.flatMap((entry) =>
        [...(graph.get(entry)?.entries() ?? [])].map(([to, file]) => `${entry} -> ${to} (${file})`),
      ),
    ).toEqual([]);
  });

  it('has no import cycle between folders', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (node: string, path: string[]) => {
      if (state.get(node) === 'done') return;
      if (state.get(node) === 'open') {
        cycles.push([...path.slice(path.indexOf(node)), node].join(' -> '));
        return;
      }
      state.set(node, 'open');
      for (const next of graph.get(node)?.keys() ?? []) visit(next, [...path, node]);
      state.set(node, 'done');
    };
    for (const node of graph.keys()) visit(node, []);
    expect(cycles).toEqual([]);
  });

  it("talks to Redis through redis/: only it and a feature's Redis-backed store (redis-*.ts) import the Redis client", () => {
    const client = /(?:\bfrom\s+|\brequire\s*\(\s*)'(ioredis|cluster-key-slot)'/;
    const outside = sourceFiles(SRC)
      .filter((file) => client.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file))
      .filter((rel) => !rel.startsWith('redis/') && !/(^|\/)redis-[\w-]+\.ts$/.test(rel));
    expect(outside).toEqual([]);
  });

  it('places stores by one rule: a Redis-backed store lives with its feature, redis/ holds none and imports no folder', () => {
    const intoFolders = [...(graph.get('redis')?.entries() ?? [])]
      .filter(([to]) => !to.endsWith('.ts'))
      .map(([to, file]) => `redis -> ${to} (${file})`);
    expect(intoFolders).toEqual([]);
    // A feature's store is its folder's own: only the folder and the composition root that builds it import it.
    const store = /(?:\bfrom\s+|\bimport\s*\(\s*)'\.\.\/(?:\.\.\/)*([\w-]+)\/redis-[\w-]+'/g;
    const reaching = sourceFiles(SRC).flatMap((file) => {
      const from = entryOf(file)!;
      return [...readFileSync(file, 'utf8').matchAll(store)]
        .filter((m) => m[1] !== from && from !== 'service')
        .map((m) => `${relative(SRC, file)} -> ${m[1]}/redis-*`);
    });
    expect(reaching).toEqual([]);
  });

  it('has no import cycle between files (type-only imports included)', () => {
    expect(fileCycles(fileGraph())).toEqual([]);
  });
});

/**
 * A function over 80 lines has stopped being read in one go: its parts
 * want names. Measured with the TypeScript parser from a function's first
 * line (its signature) to its closing brace, nested functions counted in
 * the one around them. The OpenAPI document's literals (`src/http/openapi/`)
 * are data written as functions, so they are left out. The composition
 * root, `createService`, stays on one screen: 60 lines.
 */
const MAX_FUNCTION_LINES = 80;
const COMPOSITION_ROOT_LINES = 60;

/** Every function with a body in src/: where it is, its name (or `<anonymous>`), its lines. */
function functionLengths(): { where: string; name: string; lines: number }[] {
  const found: { where: string; name: string; lines: number }[] = [];
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const named = node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
        found.push({
          where: `${relative(SRC, file)}:${first + 1}`,
          name: named ? named.getText(source) : '<anonymous>',
          lines: last - first + 1,
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('function length', () => {
  const lengths = functionLengths();

  it(`no function in src/ is over ${MAX_FUNCTION_LINES} lines (the OpenAPI document's literals aside)`, () => {
    const long = lengths
      .filter((f) => f.lines > MAX_FUNCTION_LINES && !f.where.startsWith('http/openapi/'))
      .map((f) => `${f.where} ${f.name}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it(`createService, the composition root, is at most ${COMPOSITION_ROOT_LINES} lines`, () => {
    const root = lengths.filter((f) => f.name === 'createService');
    expect(root.map((f) => f.where.split(':')[0])).toEqual(['service/index.ts']);
    expect(root[0].lines).toBeLessThanOrEqual(COMPOSITION_ROOT_LINES);
  });
});
