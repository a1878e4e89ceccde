/**
 * Every shell example of the README, docs/ and the clients' READMEs runs here, so one that stops
 * working fails the build (docs/testing.md "Docs examples" has the
 * convention): each ```sh block not marked `illustration` runs, a file's
 * blocks in order in one bash, against one instance started as the README
 * starts it (`npm start`, the admin token it keeps), which SIGTERM then
 * stops cleanly.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI, ensureBuilt } from '../support/build';
import { freePort } from '../support/processes';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '..', '..');
/** The clients' READMEs build and use each client from this repository (checked out as `idpool/` beside the examples). */
const CLIENT_READMES = ['java', 'python', 'go'].map((lang) => `clients/${lang}/README.md`);
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`), ...CLIENT_READMES].filter((f) =>
  f.endsWith('.md'),
);

interface ShellBlock {
  /** 1-based line of the opening fence. */
  line: number;
  run: boolean;
  text: string;
}

/**
 * The ```sh / ```bash / ```shell blocks of a Markdown text; `illustration` after the language marks one not run.
 * A block of any language whose info string names `file=PATH` (```java file=Ids.java) is the program the
 * next commands build: it is written to PATH, where it stands among the shell blocks.
 */
function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\b(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && !lines[i].startsWith('```')) body.push(lines[i]);
    const file = /\bfile=(\S+)/.exec(open[2])?.[1];
    if (file)
      blocks.push({
        line: start + 1,
        run: true,
        text: `cat > ${file} <<'IDPOOL_DOC_FILE'\n${body.join('\n')}\nIDPOOL_DOC_FILE`,
      });
    else if (['sh', 'bash', 'shell'].includes(open[1]))
      blocks.push({ line: start + 1, run: !/\billustration\b/.test(open[2]), text: body.join('\n') });
  }
  return blocks;
}

/**
 * A block as the test runs it: the instance's address for `localhost:8080`,
 * and a placeholder line (`TOKEN=<the printed admin token>`) left out, its
 * variable set by the test.
 */
function runnable(block: ShellBlock, port: number): string {
  return block.text
    .split('\n')
    .filter((l) => !/^(export\s+)?[A-Z_]+=<[^>]*>\s*(#.*)?$/.test(l))
    .join('\n')
    .replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `127.0.0.1:${port}`);
}

describe('the README and docs/ examples, run against one instance started by npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-docs-'));
  let port: number;
  let npm: ChildProcess;
  let stdout = '';
  let stderr = '';
  let token: string;

  beforeAll(async () => {
    // npm start runs the build: one older than src/ would test old code.
    await ensureBuilt();
    port = await freePort();
    npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        IDPOOL_ADMIN_TOKEN: '',
        IDPOOL_PORT: String(port),
        IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
        IDPOOL_REDIS_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout!.on('data', (d) => (stdout += String(d)));
    npm.stderr!.on('data', (d) => (stderr += String(d)));
    token = await waitFor(
      async () => {
        // Kept beside the SQLite file, its path (never the token) on stderr.
        const file = join(dir, 'idpool.db.admin-token');
        const printed = stderr.includes(`admin token is kept in ${file}`) && readFileSync(file, 'utf8').trim();
        const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        return up && printed;
      },
      { timeoutMs: 60_000, message: `npm start to answer on ${port}` },
    );
    // `idpool` as `npm install -g .` puts it on PATH; node_modules for `npx` in the examples' directory.
    const bin = join(dir, 'bin');
    spawnSync('mkdir', ['-p', bin]);
    writeFileSync(join(bin, 'idpool'), `#!/bin/sh\nexec node ${BUILT_CLI} "$@"\n`);
    chmodSync(join(bin, 'idpool'), 0o755);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    // The clients' READMEs build from a checkout of this repository as idpool/.
    symlinkSync(ROOT, join(dir, 'idpool'));
  }, 120_000);

  afterAll(() => {
    if (npm?.exitCode === null) npm.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it("every shell block is marked or runs: README first, then docs/ in name order, then the clients' READMEs", () => {
    const run = DOCS.flatMap((file) => shellBlocks(readFileSync(join(ROOT, file), 'utf8')).filter((b) => b.run));
    // Something runs: a convention that skipped everything would pass with nothing tested.
    expect(run.length).toBeGreaterThanOrEqual(4);
    for (const file of DOCS) {
      const blocks = shellBlocks(readFileSync(join(ROOT, file), 'utf8')).filter((b) => b.run);
      if (!blocks.length) continue;
      // One bash per file: variables carry from block to block, as in the reader's shell.
      const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }']
        .concat(blocks.map((b) => `echo "### ${file}:${b.line}" >&2\n${runnable(b, port)}`))
        .join('\n');
      const result = spawnSync('bash', ['-c', script], {
        cwd: dir,
        encoding: 'utf8',
        // A client README compiles its client and a program (javac, go run): longer on a loaded machine.
        timeout: CLIENT_READMES.includes(file) ? 180_000 : 60_000,
        env: {
          ...process.env,
          PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
          TOKEN: token,
          IDPOOL_ADMIN_TOKEN: token,
          IDPOOL_URL: `http://127.0.0.1:${port}`,
        },
      });
      const failedAt = [...result.stderr.matchAll(/^### (.*)$/gm)].pop()?.[1];
      expect(result.status, `${failedAt ?? file} failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
    }
  }, 600_000);

  it('SIGTERM to npm start stops the service cleanly (npm hands the signal on to node)', async () => {
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    npm.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout).toMatch(/"signal":"SIGTERM","msg":"stopped"/);
    expect(
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => 'answered',
        () => 'closed',
      ),
    ).toBe('closed');
  }, 30_000);
});
