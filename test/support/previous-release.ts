import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** The commit of the release before this one, as `test/upgrade/previous-release.txt` records it (its first line). */
export function previousReleaseCommit(): string {
  const first = readFileSync(join(ROOT, 'test', 'upgrade', 'previous-release.txt'), 'utf8')
    .split('\n')[0]
    .trim();
  if (!/^[0-9a-f]{40}$/.test(first))
    throw new Error(`test/upgrade/previous-release.txt: not a full commit id: ${first}`);
  return first;
}

/** One dependency tree for both lock files: the previous release may use this checkout's `node_modules`. */
function sameDependencies(dir: string): boolean {
  const packages = (file: string) =>
    JSON.stringify((JSON.parse(readFileSync(file, 'utf8')) as { packages: unknown }).packages);
  return packages(join(dir, 'package-lock.json')) === packages(join(ROOT, 'package-lock.json'));
}

/**
 * The previous release built in a temporary directory of its own (`git
 * archive` of its commit, its dependencies, `npm run build`), kept there by
 * commit so later runs start at once; resolves to the directory whose
 * `dist/src/main.js` is that release's server. Its dependencies are a link
 * to this checkout's `node_modules` when both lock files list the same
 * packages (the common case between two releases, and seconds instead of a
 * minute), `npm ci` otherwise.
 */
export function buildPreviousRelease(commit = previousReleaseCommit()): string {
  const dir = join(tmpdir(), `idpool-release-${commit}`);
  waitForBuilder(dir);
  if (existsSync(join(dir, '.built'))) return dir;
  writeFileSync(`${dir}.building`, String(process.pid));
  // Built aside and renamed into place: a run killed half way, or two runs at once, never leave a half-built release there.
  const work = `${dir}.${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const archive = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', commit], { maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', work], { input: archive });
    if (sameDependencies(work)) symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
    else
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts=false'], {
        cwd: work,
        stdio: 'ignore',
      });
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: work, stdio: 'ignore' });
    execFileSync('touch', [join(work, '.built')]);
    try {
      renameSync(work, dir);
    } catch (err) {
      // Another run finished first: use its build.
      if (!existsSync(join(dir, '.built'))) throw err;
      rmSync(work, { recursive: true, force: true });
    }
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(`${dir}.building`, { force: true });
  }
  return dir;
}

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (up to 5 minutes) while another process builds the release into `dir` ({@link startBuildingPreviousRelease}). */
function waitForBuilder(dir: string): void {
  const deadline = Date.now() + 300_000;
  const tick = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    let pid: number;
    try {
      pid = Number(readFileSync(`${dir}.building`, 'utf8'));
    } catch {
      return; // nobody is building
    }
    if (pid === process.pid || !alive(pid) || Date.now() > deadline) return;
    Atomics.wait(tick, 0, 0, 250);
  }
}

/**
 * The build started in a process of its own, for the global setup of a
 * whole run: the rolling upgrade runs among the files run alone, at the end,
 * and finds it built instead of building it while a core idles.
 */
export function startBuildingPreviousRelease(): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'build-previous-release.ts')], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  child.on('error', () => undefined); // the test builds it itself then
  return child;
}
