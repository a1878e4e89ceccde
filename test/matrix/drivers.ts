/**
 * The Java, Python and Go clients at the matrix's doors: the drivers in
 * test/matrix/drivers/ (one program per language over clients/LANG, one
 * protocol), built once per run whatever number of matrix files ask (the
 * three backends' files run side by side): into a directory named by a hash
 * of their sources, the first file building under a lock while the others
 * wait for it.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alive } from '../support/pid';
import { sleep } from '../support/wait';

const execFileAsync = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const DRIVERS = join(__dirname, 'drivers');
const CLIENTS = join(ROOT, 'clients');

/** A language's driver, built. */
export interface Driver {
  readonly language: 'java' | 'python' | 'go';
  readonly command: readonly [string, string[]];
  readonly env: Record<string, string>;
}

/** What one driver run answered per entity and door (`take`, `leased`): ids, a refusal, or a client error. */
export type DriverAnswer = { ids: string[] } | { status: number; code: string } | { error: string };

function sourcesOf(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext) && !f.includes('__pycache__'))
    .map((f) => join(dir, f))
    .sort();
}

/** Every file the builds read: a change to a client or a driver makes a new directory. */
function inputs(): string[] {
  return [
    ...sourcesOf(join(CLIENTS, 'java', 'src', 'main'), '.java'),
    ...sourcesOf(join(CLIENTS, 'go'), '.go'),
    ...sourcesOf(DRIVERS, '.java'),
    ...sourcesOf(DRIVERS, '.go'),
    join(DRIVERS, 'go', 'go.mod'),
  ];
}

async function build(dir: string): Promise<void> {
  const run = async (
    what: string,
    command: string,
    args: string[],
    options: { cwd?: string; env?: NodeJS.ProcessEnv },
  ) => {
    try {
      await execFileAsync(command, args, options);
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      throw new Error(`${what} failed:\n${stdout}${stderr}`, { cause: err });
    }
  };
  const java = [
    ...sourcesOf(join(CLIENTS, 'java', 'src', 'main'), '.java'),
    join(DRIVERS, 'java', 'MatrixDriver.java'),
  ];
  await Promise.all([
    // C1 only and the serial collector: javac's run is short (as test/support/clients.ts builds).
    run(
      'javac',
      'javac',
      ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', '--release', '11', '-d', join(dir, 'classes'), ...java],
      {},
    ),
    run('go build', 'go', ['build', '-o', join(dir, 'matrixdriver'), '.'], {
      cwd: join(DRIVERS, 'go'),
      // Standard library and the client beside it only: nothing may be fetched.
      env: { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' },
    }),
  ]);
}

/** Builds into `dir` unless a run did already; one process builds, the others wait for its `built` mark. */
async function buildOnce(dir: string): Promise<void> {
  const mark = join(dir, 'built');
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 5 * 60_000;
  while (!existsSync(mark)) {
    try {
      mkdirSync(lock);
    } catch {
      const owner = Number(readFileSync(join(lock, 'owner'), { encoding: 'utf8', flag: 'a+' }) || 0);
      // A lock whose builder died (a run stopped half way) is taken over.
      if (owner > 0 && !alive(owner)) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`${lock}: held by process ${owner} for 5 minutes`);
      await sleep(200);
      continue;
    }
    writeFileSync(join(lock, 'owner'), String(process.pid));
    try {
      if (existsSync(mark)) break;
      const building = `${dir}.${process.pid}`;
      rmSync(building, { recursive: true, force: true });
      mkdirSync(building, { recursive: true });
      await build(building);
      writeFileSync(join(building, 'built'), '');
      rmSync(dir, { recursive: true, force: true });
      renameSync(building, dir);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

let built: Promise<Driver[]> | undefined;

/** The three drivers, built (once per run, shared by every matrix file). */
export function matrixDrivers(): Promise<Driver[]> {
  built ??= (async (): Promise<Driver[]> => {
    const hash = createHash('sha256');
    for (const file of inputs()) hash.update(file).update(readFileSync(file));
    const dir = join(tmpdir(), `idpool-matrix-drivers-${hash.digest('hex').slice(0, 16)}`);
    await buildOnce(dir);
    return [
      {
        language: 'java',
        command: ['java', ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', join(dir, 'classes'), 'MatrixDriver']],
        env: {},
      },
      {
        language: 'python',
        command: ['python3', [join(DRIVERS, 'matrix_driver.py')]],
        env: { PYTHONPATH: join(CLIENTS, 'python', 'src'), PYTHONDONTWRITEBYTECODE: '1' },
      },
      { language: 'go', command: [join(dir, 'matrixdriver'), []], env: {} },
    ];
  })();
  return built;
}

/** Runs a driver over `entities` (key → secret; `numbers` the business-number ones); its answers by key, then door. */
export function runDriver(
  driver: Driver,
  url: string,
  entities: Record<string, string>,
  numbers: readonly string[],
  counts: { take: number; leased: number },
): Promise<Map<string, Map<string, DriverAnswer>>> {
  const [command, args] = driver.command;
  const proc = spawn(command, args, {
    env: {
      ...process.env,
      ...driver.env,
      MATRIX_URL: url,
      MATRIX_ENTITIES: Object.entries(entities)
        .map(([k, s]) => `${k}=${s}`)
        .join(';'),
      MATRIX_NUMBERS: numbers.join(','),
      TAKE: String(counts.take),
      LEASED: String(counts.leased),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += String(d)));
  proc.stderr.on('data', (d) => (err += String(d)));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) => {
      const answers = new Map<string, Map<string, DriverAnswer>>();
      for (const line of out.split('\n')) {
        const [what, key, door, ...rest] = line.split(' ');
        if (!door) continue;
        const answer: DriverAnswer =
          what === 'ids'
            ? { ids: rest.filter((w) => w !== '') }
            : what === 'refused'
              ? { status: Number(rest[0]), code: rest[1] }
              : { error: rest.join(' ') };
        if (!answers.has(key)) answers.set(key, new Map());
        answers.get(key)!.set(door, answer);
      }
      if (code !== 0 && answers.size === 0)
        reject(new Error(`${driver.language} driver exited with ${code}:\n${out}${err}`));
      else resolve(answers);
    });
  });
}
