/**
 * The build the tests spawn: `dist/src/main.js` and `dist/src/cli/index.js`,
 * what `npm start` and the installed `idpool` run. A process of the build
 * starts in about half the time and CPU of the same code through tsx, and the
 * suite starts hundreds of them. {@link ensureBuilt} runs `npm run build` first
 * when anything the build reads is newer than the last build, so a test never
 * runs code older than its tree.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { alive } from './pid';
import { sleep } from './wait';

const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'dist');

/** The service, as `npm start` runs it. */
export const BUILT_MAIN = join(DIST, 'src', 'main.js');
/** The CLI, as package.json's `bin` installs it. */
export const BUILT_CLI = join(DIST, 'src', 'cli', 'index.js');

/**
 * What `npm run build` reads: tsconfig.json's `include` (src/, which also
 * holds the Lua scripts and dashboard assets copy-assets.js copies,
 * migrations/, ormconfig.ts), the two steps' own files and package.json.
 */
const INPUTS = ['src', 'migrations', 'ormconfig.ts', 'tsconfig.json', 'scripts/copy-assets.js', 'package.json'];

/**
 * Left by a build this helper ran, with the time it started: a file changed
 * while tsc was reading is newer than that. Written at the start as
 * `.building` and renamed when the build succeeded, so a build killed half
 * way leaves no stamp and the next run builds again.
 */
const STAMP = join(DIST, '.built');
const STARTED = join(DIST, '.building');
/** Held by the one process building (three vitest workers start at once); see {@link lock}. */
const LOCK = join(DIST, '.build-lock');

/** A build takes ~13 s on a quiet machine; three times that beside a loaded suite. Past this, the holder is stuck. */
const LOCK_WAIT_MS = 10 * 60_000;

const mtimeOf = (path: string): number | undefined => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

function newestInput(path: string): number {
  const s = statSync(path, { throwIfNoEntry: false });
  if (!s) return 0;
  if (!s.isDirectory()) return s.mtimeMs;
  // Files only: a directory's time moves with every editor's swap file.
  return Math.max(0, ...readdirSync(path).map((name) => newestInput(join(path, name))));
}

/** When the build in dist/ read its inputs, or undefined when there is none or one was cut short. */
function builtAt(): number | undefined {
  const stamp = mtimeOf(STAMP);
  if (stamp !== undefined) return stamp;
  // No stamp of ours: `npm ci` (prepare) or `npm run build` by hand, unless one of ours was cut short.
  return mtimeOf(STARTED) === undefined ? mtimeOf(BUILT_MAIN) : undefined;
}

function fresh(): boolean {
  const built = builtAt();
  return built !== undefined && Math.max(...INPUTS.map((p) => newestInput(join(ROOT, p)))) < built;
}

function ownerOf(lock: string): number | undefined {
  try {
    return Number(readFileSync(join(lock, 'owner'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Renames `dir` aside (one atomic step), then removes it. */
function removeAside(dir: string): void {
  const aside = `${dir}.gone.${process.pid}.${randomBytes(4).toString('hex')}`;
  renameSync(dir, aside);
  rmSync(aside, { recursive: true, force: true });
}

/**
 * Takes the build lock: a directory holding its owner's pid, renamed into
 * place whole (a rename onto a directory that has an owner fails), so the
 * lock never exists without its owner. A lock whose owner died (a run
 * stopped with Ctrl-C during a build) is broken by one waiter only: it makes
 * `break` inside that lock first, then checks the owner is still the dead one.
 */
async function lock(): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    const mine = `${LOCK}.${process.pid}.${randomBytes(4).toString('hex')}`;
    mkdirSync(mine, { recursive: true });
    writeFileSync(join(mine, 'owner'), String(process.pid));
    try {
      renameSync(mine, LOCK);
      return;
    } catch (err) {
      rmSync(mine, { recursive: true, force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
    const owner = ownerOf(LOCK);
    if (owner !== undefined && !alive(owner)) {
      try {
        mkdirSync(join(LOCK, 'break'));
        if (ownerOf(LOCK) === owner) removeAside(LOCK);
        else rmdirSync(join(LOCK, 'break')); // a new lock took its place meanwhile
        continue;
      } catch {
        // Another waiter is breaking it, or it is gone already.
      }
    }
    if (Date.now() > deadline)
      throw new Error(
        `${LOCK}: held by process ${owner} for ${LOCK_WAIT_MS / 60_000} minutes; remove it if no build runs`,
      );
    await sleep(250);
  }
}

function build(): Promise<void> {
  return new Promise((resolve, reject) => {
    // This Node first on PATH: `npm run build` runs tsc with the Node the tests run on.
    const PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
    const proc = spawn('npm', ['run', 'build', '--silent'], {
      cwd: ROOT,
      env: { ...process.env, PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d) => (out += String(d)));
    proc.stderr.on('data', (d) => (out += String(d)));
    proc.once('error', reject);
    proc.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`npm run build exited with ${code} (the tests spawn dist/):\n${out}`)),
    );
  });
}

async function buildIfStale(): Promise<void> {
  if (fresh()) return;
  mkdirSync(DIST, { recursive: true });
  await lock();
  try {
    // Another process may have built while this one waited.
    if (fresh()) return;
    rmSync(STAMP, { force: true });
    writeFileSync(STARTED, '');
    await build();
    renameSync(STARTED, STAMP);
  } finally {
    removeAside(LOCK);
  }
}

let checked: Promise<void> | undefined;

/**
 * Builds dist/ unless it is newer than everything it is built from; checked
 * once per test file (vitest loads this module anew for each), a failed build
 * failing every spawn of the file. Call it before spawning `dist/`:
 * `startInstance`, `runToExit` and the CLI's `idpool()` do.
 */
export function ensureBuilt(): Promise<void> {
  checked ??= buildIfStale();
  return checked;
}
