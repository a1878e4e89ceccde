import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program';
import { openApiDocument } from '../../src/http/openapi';

/**
 * Issue 48 item 4: the reference docs list what exists. The README's route
 * table against the OpenAPI document's operations, its error codes against
 * the OpenAPI's error codes and the codes the service's errors carry, and
 * docs/cli.md against the commander program's commands and flags. Each
 * side checked both ways: nothing missing, nothing that is not there.
 */
const ROOT = join(__dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const CLI_DOC = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');

/** The rows of the Markdown table in `text` whose header's first cell is `first`, as cells. */
function tableRows(text: string, first: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`| ${first} |`));
  if (start < 0) throw new Error(`no table headed "${first}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    // A `\|` inside a cell is a literal bar.
    rows.push(
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** `METHOD /path` with every path parameter as `:_` (`{key}`, `:key` and `:id` alike). */
const route = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/\{[^}]+\}|:[A-Za-z]+/g, ':_')}`;

/** Served, documented in the OpenAPI, and not a route a reader calls: the pages' own script and style files. */
const ASSET_ROUTES = new Set(['GET /admin/ui/:_', 'GET /docs/:_']);

describe('README: routes and error codes', () => {
  const document = openApiDocument() as {
    paths: Record<string, Record<string, unknown>>;
    components: { schemas: { Error: { properties: { error: { properties: { code: { enum: string[] } } } } } } };
  };

  it('the route table lists every operation of /openapi.json, and nothing else', () => {
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
        .map((m) => route(m, path)),
    );
    const listed = tableRows(README, 'route').flatMap(([cell]) =>
      [...cell.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`?\s]*)/g)].map((m) => route(m[1], m[2])),
    );
    expect(new Set(listed).size, 'a route listed twice').toBe(listed.length);
    expect([...listed].sort()).toEqual(documented.filter((r) => !ASSET_ROUTES.has(r)).sort());
  });

  it('the error codes list every code the service answers with, the OpenAPI names the same, and their statuses match', () => {
    // The paragraph that names them, up to the route table: "`invalid_request` 400, …, and 503 with `Retry-After` …: `pool_exhausted`, …".
    const text = README.slice(README.indexOf('Errors are `{"error"'), README.indexOf('| route | auth | what |'));
    const table = new Map<string, number>();
    let status = 0;
    for (const m of text.matchAll(/`([a-z_]+)`(?:\s+(\d{3}))?|\b(\d{3})\s+with\s+`Retry-After`/g)) {
      if (m[3]) status = Number(m[3]);
      else if (m[1] !== 'Retry-After') table.set(m[1], m[2] ? Number(m[2]) : status);
    }
    const openapi = document.components.schemas.Error.properties.error.properties.code.enum;
    const inCode = serviceErrorCodes();
    expect([...table.keys()].sort()).toEqual([...inCode.keys()].sort());
    expect([...openapi].sort()).toEqual([...inCode.keys()].sort());
    for (const [code, status] of inCode) expect(table.get(code), code).toBe(status);
  });
});

/**
 * `code → status` of every error the HTTP service answers with: each
 * `super(status, 'code'`, `IdpoolError(status, 'code'` and `fixedError(status, 'code'` of `src/`, but
 * the library's and the client's own (they never reach the wire).
 */
function serviceErrorCodes(): Map<string, number> {
  const codes = new Map<string, number>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (!['library', 'client'].includes(name)) walk(path);
      } else if (name.endsWith('.ts'))
        for (const m of readFileSync(path, 'utf8').matchAll(
          /(?:super|IdpoolError|fixedError)\(\s*(\d{3}),\s*'([a-z_]+)'/g,
        ))
          codes.set(m[2], Number(m[1]));
    }
  };
  walk(join(ROOT, 'src'));
  return codes;
}

/** Every command of the program that runs something (groups like `apps` only hold others), by its path. */
function commands(program: Command): Map<string, Command> {
  const out = new Map<string, Command>();
  const walk = (c: Command, prefix: string) => {
    for (const sub of c.commands) {
      const path = `${prefix}${sub.name()}`;
      if (sub.commands.length === 0) out.set(path, sub);
      walk(sub, `${path} `);
    }
  };
  walk(program, '');
  return out;
}

describe('docs/cli.md: every command and flag of the program', () => {
  const program = buildProgram({
    env: {},
    stdout: () => undefined,
    stderr: () => undefined,
    serve: () => Promise.resolve(),
  });
  const all = commands(program);
  const globalFlags = program.options.map((o) => o.long!);
  const rows = tableRows(CLI_DOC, 'command').map(([cell]) => cell);
  /** The commands a row names (`idpool apps list … · idpool apps show …`: two). */
  const namedIn = (row: string) =>
    [...all.keys()].filter(
      (path) => new RegExp(`\`idpool ${path}(?=[\\s\`])`).test(row) || row.includes(`· \`idpool ${path} `),
    );

  it('each command has a row, and each row names a command that exists', () => {
    for (const path of all.keys())
      expect(
        rows.some((r) => namedIn(r).includes(path)),
        `idpool ${path}`,
      ).toBe(true);
    for (const row of rows) expect(namedIn(row), row.slice(0, 60)).not.toEqual([]);
  });

  it("each command's flags are in its rows, and each flag there is one of its own or a global one", () => {
    for (const [path, command] of all) {
      const own = command.options.map((o) => o.long!);
      const text = rows.filter((r) => namedIn(r).includes(path)).join(' ');
      for (const flag of own) expect(text, `idpool ${path} ${flag}`).toMatch(new RegExp(`${flag}(?![a-z-])`));
    }
    for (const row of rows) {
      const known = new Set([...namedIn(row).flatMap((p) => all.get(p)!.options.map((o) => o.long!)), ...globalFlags]);
      // Only what is written as a flag of the command (inside the command cell's code span).
      for (const [flag] of row.split(' | ')[0].matchAll(/--[a-z][a-z-]*/g))
        expect(known, `${flag} in ${row.slice(0, 60)}`).toContain(flag);
    }
  });

  it('the global flags are described', () => {
    // Inside a code span (`--json`, `idpool --version`).
    for (const flag of globalFlags) expect(CLI_DOC, flag).toMatch(new RegExp(`\`[^\`\n]*${flag}(?![a-z-])[^\`\n]*\``));
  });
});
