import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
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
  if (existsSync(join(dir, '.built'))) return dir;
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
  }
  return dir;
}
