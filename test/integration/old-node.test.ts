import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE_MAJOR_NEEDED } from '../../src/node-version';

const ROOT = join(__dirname, '..', '..');
const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';

/** A `node` older than idpool needs, from PATH or the system's (this machine's `/usr/bin/node` is 20). */
function olderNode(): { path: string; version: string } | undefined {
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/bin/node',
    '/usr/local/bin/node',
  ];
  for (const path of new Set(candidates)) {
    try {
      const version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
      if (Number(version.split('.')[0]) < NODE_MAJOR_NEEDED) return { path, version };
    } catch {
      // Not there, or not a node.
    }
  }
  return undefined;
}

/**
 * The two entry points and the check, compiled as the build compiles them and
 * nothing else: were anything but the check to run first on an old Node, its
 * require() would fail with "Cannot find module" instead of the one line.
 */
function compileEntryPoints(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-old-node-'));
  for (const file of ['src/node-version.ts', 'src/main.ts', 'src/cli/index.ts']) {
    const out = ts.transpileModule(readFileSync(join(ROOT, file), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    const target = join(dir, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, out.outputText);
  }
  return dir;
}

describe('an unsupported Node is refused at once, with one line', () => {
  const old = olderNode();
  const line = new RegExp(
    `^idpool: Node (\\S+) found, Node ${NODE_MAJOR_NEEDED} or newer needed: run \`\\. scripts/use-node24\\.sh\`.*\\n$`,
  );
  const dir = compileEntryPoints();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('needs the Node major of package.json engines', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${NODE_MAJOR_NEEDED}`);
  });

  if (!old) {
    const message = `!!! no node older than ${NODE_MAJOR_NEEDED} on PATH or in /usr/bin, /usr/local/bin`;
    if (REQUIRED) throw new Error(`${message} and IDPOOL_REQUIRE_SERVICES=1`);
    process.stderr.write(`\n${message}: SKIPPING the old-Node tests\n\n`);
    return;
  }

  for (const [entry, what] of [
    ['src/main.js', 'npm start'],
    ['src/cli/index.js', 'idpool'],
  ]) {
    it(`${what} (${entry}) on Node ${old.version}: one line naming both versions and the fix, exit 1`, () => {
      const run = spawnSync(old.path, [join(dir, entry), '--help'], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(line);
      expect(line.exec(run.stderr)?.[1]).toBe(old.version);
    });

    it(`${what} (${entry}) on this Node (${process.versions.node}) passes the check and goes on to load the rest`, () => {
      const run = spawnSync(process.execPath, [join(dir, entry), '--help'], { encoding: 'utf8', timeout: 30_000 });
      expect(run.stderr).not.toMatch(/or newer needed/);
      // Only the entry points were compiled: the next module they load is not there.
      expect(run.stderr).toMatch(/Cannot find module/);
      expect(run.status).not.toBe(0);
    });
  }
});

describe('npm start before a build says so in one line, on an old Node too (scripts/start.js)', () => {
  // The launcher and package.json alone: no dist/ beside them.
  const dir = mkdtempSync(join(tmpdir(), 'idpool-unbuilt-'));
  mkdirSync(join(dir, 'scripts'));
  writeFileSync(join(dir, 'scripts', 'start.js'), readFileSync(join(ROOT, 'scripts', 'start.js')));
  writeFileSync(join(dir, 'package.json'), readFileSync(join(ROOT, 'package.json')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const start = (node: string) =>
    spawnSync(node, [join(dir, 'scripts', 'start.js')], { encoding: 'utf8', timeout: 30_000 });

  it('npm start runs the launcher', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toBe('exec node scripts/start.js');
  });

  it(`on this Node (${process.versions.node}): the build is missing, and how to make it`, () => {
    const run = start(process.execPath);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      'idpool: no build in dist/: run `npm run build` (npm ci builds too), and npm start again\n',
    );
  });

  const old = olderNode();
  if (old)
    it(`on Node ${old.version}: both versions, the fix, and the build, no stack`, () => {
      const run = start(old.path);
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(
        `idpool: Node ${old.version} found, Node ${NODE_MAJOR_NEEDED} or newer needed: run \`. scripts/use-node24.sh\`; then no build in dist/: run \`npm run build\` (npm ci builds too), and npm start again\n`,
      );
    });
});
