/**
 * `npm run chaos -- --minutes N --seed S [--ids-out FILE]`: a seeded chaos
 * run (issue 29). Three idpool processes, Redis Sentinel and a private
 * MariaDB under load from twenty entities, two business-number entities
 * whose zones put a period boundary inside the run (numbers.ts) and a
 * direct consumer, while the nemesis (nemesis.ts) injects up to two faults
 * at once. The checker then says whether any id or number was handed out
 * twice, any monotonic client saw its ids go back, any number was dated
 * outside the Redis clock's period or a new period did not start again at
 * 1, any answer was a 500, a 503 without Retry-After or a hang, and whether
 * every process is alive; the report is a fault × outcome table. Exits 1 on any of those, 2 on bad arguments.
 *
 * Needs root (network namespaces), redis-server, mariadbd, mysqldump and
 * libfaketime; a long run, not a unit test (see docs/testing.md).
 */
import { createWriteStream, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { answers, netnsUnavailable, removeLeftoverLabs } from '../../test/support/netns';
import { sleep } from '../../test/support/wait';
import { entityKeys } from '../../src/redis/keys';
import { type Answer, CLIENT_TIMEOUT_MS, Load, entitySpecs } from './load';
import { type FaultKind, INSTANCE_FAULTS, dependencyFaults, type Injection, Nemesis, type Probe } from './nemesis';
import { checkNumbers, numberSpecs, numbersBehindFence, runBoundaries } from './numbers';
import { checkGapless, gaplessSpec } from './gapless';
import { Random } from './random';
import { ChaosSystem, SentinelRedis } from './system';
import { LIBFAKETIME } from '../../test/support/processes';

interface Options {
  minutes: number;
  seed: number;
  topology: 'sentinel' | 'cluster';
  idsOut?: string;
}

function parseArgs(argv: string[]): Options {
  const out: Options = { minutes: 3, seed: 1, topology: 'sentinel' };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--minutes' && Number(value) > 0) out.minutes = Number(value);
    else if (flag === '--seed' && /^\d+$/.test(value ?? '')) out.seed = Number(value);
    else if (flag === '--topology' && (value === 'sentinel' || value === 'cluster')) out.topology = value;
    else if (flag === '--ids-out' && value) out.idsOut = value;
    else {
      console.error(
        `chaos: bad argument ${flag} ${value ?? ''}\nusage: npm run chaos -- --minutes N --seed S [--topology sentinel|cluster] [--ids-out FILE]`,
      );
      process.exit(2);
    }
    i++;
  }
  return out;
}

/** What went wrong, each a reason to exit 1, and which faults were active when it did. */
interface Finding {
  readonly kind: 'repeat' | 'order' | '500' | 'hang' | 'status' | 'dead' | 'misdated' | 'restart' | 'gapless';
  readonly at: number;
  readonly text: string;
}

function log(line: string): void {
  console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const why = netnsUnavailable();
  if (why) throw new Error(`chaos needs network namespaces: ${why}`);
  if (!existsSync(LIBFAKETIME))
    throw new Error(`chaos needs libfaketime (${LIBFAKETIME}): apt-get install -y faketime`);
  if (!existsSync(join(__dirname, '..', '..', 'dist', 'src', 'main.js'))) throw new Error('run npm run build first');
  removeLeftoverLabs();
  const random = new Random(options.seed);
  const date = new Date().toISOString();
  log(`chaos: seed ${options.seed}, ${options.minutes} min, topology ${options.topology}`);
  const system = await ChaosSystem.start(log, options.topology);
  // Interrupted: the processes and namespaces go with the run.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log(`chaos: ${signal}, stopping`);
      void system.stop().finally(() => process.exit(130));
    });
  const idsOut = options.idsOut ? createWriteStream(options.idsOut) : undefined;
  const direct = system.redis.client();
  const findings: Finding[] = [];
  let nemesis: Nemesis | undefined;
  try {
    const runTag = `${options.seed}-${Date.now().toString(36)}`;
    // Business-number entities whose zones put a period boundary inside the run (numbers.ts).
    const numbered = numberSpecs(runTag, runBoundaries(Date.now(), options.minutes));
    const gapless = gaplessSpec(runTag);
    const specs = [...entitySpecs(random, runTag), ...numbered.map((n) => n.spec), gapless];
    const entities = await Load.register(specs, system.nodes);
    log(
      `chaos: business numbers' boundaries at ${numbered.map((n) => `${new Date(n.shape.boundary).toISOString().slice(11, 19)} (${n.shape.zone})`).join(', ')}`,
    );
    const t0 = Date.now();
    const load = new Load(entities, system.nodes, random, t0, idsOut);
    // Every instance serves every entity before the clock starts (the registry reaches each within a second or two).
    await sleep(3000);
    load.start(direct);

    /** Each pool entity's offsets in SQL, with its pool's length and fence in Redis. */
    const offsets = async () => {
      const c = await createConnection({
        host: '127.0.0.1',
        port: system.db.port,
        user: 'root',
        database: 'idpool',
        connectTimeout: 2000,
      });
      try {
        const [rows] = (await c.query(
          'SELECT entity_key AS k, CAST(current_offset AS CHAR) AS o, CAST(start_offset AS CHAR) AS s FROM application',
        )) as unknown as [{ k: string; o: string; s: string }[]];
        const out = [];
        for (const e of entities) {
          if (e.mode === 'snowflake' || e.numbers) continue;
          const row = rows.find((r) => r.k === e.key);
          if (!row) throw new Error(`${e.key} missing from the database`);
          const keys = entityKeys(e.key);
          const [pooled, fence] = await Promise.all([direct.llen(keys.ids), direct.get(keys.fence)]);
          out.push({
            entity: e,
            current: BigInt(row.o),
            start: BigInt(row.s),
            pooled,
            fence: fence === null ? -1n : BigInt(fence),
          });
        }
        return out;
      } finally {
        await c.end();
      }
    };
    const probe: Probe = {
      async wasted() {
        const rows = await offsets().catch(() => undefined);
        return rows?.reduce((n, r) => n + Number(r.current - r.start) - r.entity.ids.size - r.pooled, 0);
      },
      // With one deployment (no stride) an id is its offset: the next offset must be above the fence.
      databaseBehindFence: async () =>
        (await offsets()).some((r) => r.current <= r.fence) ||
        (await numbersBehindFence(
          system.db.port,
          direct,
          entities.filter((e) => !e.gapless),
        )),
    };

    nemesis = new Nemesis(
      system,
      random,
      entities.map((e) => e.key),
      load.answers,
      probe,
      log,
      options.minutes,
    );
    const end = t0 + options.minutes * 60_000;
    const progress = setInterval(() => {
      const ids = entities.reduce((n, e) => n + e.ids.size, 0);
      log(`chaos: ${load.answers.length} answers, ${ids} ids, ${nemesis!.injections.length} faults so far`);
    }, 30_000);
    await nemesis.run(end);
    const left = end - Date.now();
    if (left > 0) await sleep(left);
    clearInterval(progress);
    await load.stop();
    const finalWaste = await probe.wasted();

    // The checker.
    const excused = (a: Answer) =>
      nemesis!.excuses.some((e) => e.node === a.node && a.start <= e.to && a.end >= e.from);
    const statuses = new Map<number, number>();
    for (const a of load.answers) {
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      const where = `instance ${a.node}, ${entities[a.entity].key}`;
      if (a.status === 200 || a.status === 429) continue;
      if (a.status === 503 && a.retryAfter) continue;
      if (a.status === 503)
        findings.push({ kind: 'status', at: a.end, text: `503 without Retry-After (${where}): ${a.detail}` });
      else if (a.status === 500) findings.push({ kind: '500', at: a.end, text: `500 (${where}): ${a.detail}` });
      else if (a.status !== 0)
        findings.push({ kind: 'status', at: a.end, text: `${a.status} (${where}): ${a.detail}` });
      else if (!excused(a))
        findings.push({
          kind: a.timedOut ? 'hang' : 'status',
          at: a.end,
          text: a.timedOut ? `no answer in ${CLIENT_TIMEOUT_MS} ms (${where})` : `no answer (${where}): ${a.detail}`,
        });
    }
    for (const e of entities)
      for (const r of e.ids.repeats())
        findings.push({
          kind: 'repeat',
          at: t0 + Math.max(...r.at),
          text: `${e.key}: id ${r.id} handed out ${r.at.length} times (at ${r.at.map((t) => (t / 1000).toFixed(1)).join(', ')} s)`,
        });
    const numberLines: string[] = [];
    numbered.forEach(({ spec, shape }) => {
      const entity = entities.find((e) => e.key === spec.key)!;
      const faultBetween = (from: number, to: number) =>
        nemesis!.injections.some((i) => i.at <= to && (i.healAt ?? i.at) + (i.unavailableMs ?? 90_000) >= from);
      const checked = checkNumbers(spec.key, shape, entity.takes, spec.mode === 'monotonic', faultBetween);
      findings.push(...checked.findings);
      numberLines.push(checked.summary);
    });
    // The gapless series: its ledger shows no hole and no duplicate, and holds every number answered (gapless.ts).
    const gaplessEntity = entities.find((e) => e.key === gapless.key)!;
    const liveNode = system.nodes.find((n) => n.alive()) ?? system.nodes[0];
    const gaplessCheck = await checkGapless(liveNode.url, gapless.key, gaplessEntity.secret, gaplessEntity.takes).catch(
      (err: Error) => ({
        problems: [`the gapless ledger could not be read: ${err.message}`],
        summary: 'gapless: not read',
      }),
    );
    for (const text of gaplessCheck.problems) findings.push({ kind: 'gapless', at: Date.now(), text });
    numberLines.push(gaplessCheck.summary);
    for (const b of load.orderBreaks)
      findings.push({ kind: 'order', at: t0 + b.at, text: `${b.entity}: ${b.got} after ${b.previous}` });
    for (const n of system.nodes)
      if (!n.alive())
        findings.push({
          kind: 'dead',
          at: Date.now(),
          text: `instance ${n.index} is not running:\n${n.instance?.output().slice(-2000)}`,
        });
    // Whatever the nemesis killed it started again: every server answers at the end.
    const redisPorts =
      system.redis instanceof SentinelRedis
        ? system.redis.servers.map((s) => s.port)
        : system.redis.cluster.nodes.map((n) => n.port);
    for (const port of redisPorts)
      await answers('127.0.0.1', port, 5000).catch(() =>
        findings.push({ kind: 'dead', at: Date.now(), text: `the Redis server on ${port} does not answer` }),
      );
    await createConnection({ host: '127.0.0.1', port: system.db.port, user: 'root', connectTimeout: 5000 })
      .then((c) => c.end())
      .catch((err: Error) =>
        findings.push({ kind: 'dead', at: Date.now(), text: `MariaDB does not answer: ${err.message}` }),
      );

    const logs = mkdtempSync(join(tmpdir(), `idpool-chaos-${options.seed}-`));
    for (const n of system.nodes) writeFileSync(join(logs, `instance-${n.index}.log`), n.output());
    log(`chaos: instance logs in ${logs}`);
    report(
      system,
      options,
      date,
      t0,
      entities.reduce((n, e) => n + e.ids.size, 0),
      load,
      nemesis,
      findings,
      statuses,
      finalWaste,
      numberLines,
    );
    return findings.length || nemesis.problems.length ? 1 : 0;
  } finally {
    direct.disconnect();
    idsOut?.end();
    nemesis?.cleanup();
    await system.stop();
  }
}

function report(
  system: ChaosSystem,
  options: Options,
  date: string,
  t0: number,
  ids: number,
  load: Load,
  nemesis: Nemesis,
  findings: Finding[],
  statuses: Map<number, number>,
  finalWaste: number | undefined,
  numberLines: readonly string[],
): void {
  // A finding counts against every fault whose window (injection to recovery, plus 5 s) holds it.
  const during = (inj: Injection, at: number) =>
    at >= inj.at && at <= (inj.healAt ?? inj.at) + (inj.unavailableMs ?? 90_000) + 5_000;
  const kinds: FaultKind[] = [...new Set([...INSTANCE_FAULTS, ...dependencyFaults(system)])];
  const lines = [
    `## Chaos run: seed ${options.seed}, ${options.minutes} min, topology ${options.topology}, ${date}`,
    '',
    '| fault | injected | longest unavailability after the heal | ids wasted (change over the fault) | repeats | 500s | hangs |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const kind of kinds) {
    const list = nemesis.injections.filter((i) => i.kind === kind);
    const count = (k: Finding['kind']) =>
      findings.filter((f) => f.kind === k && list.some((i) => during(i, f.at))).length;
    const worst = list.some((i) => i.unavailableMs === undefined)
      ? 'no recovery'
      : list.length
        ? `${(Math.max(...list.map((i) => i.unavailableMs!)) / 1000).toFixed(1)} s`
        : '–';
    const wastes = list.map((i) => i.wasted).filter((w): w is number => w !== undefined);
    lines.push(
      `| ${kind} | ${list.length} | ${worst} | ${wastes.length ? wastes.reduce((a, b) => a + b, 0) : '–'} | ${count('repeat')} | ${count('500')} | ${count('hang')} |`,
    );
  }
  const outside = (k: Finding['kind']) =>
    findings.filter((f) => f.kind === k && !nemesis.injections.some((i) => during(i, f.at))).length;
  lines.push(`| (no fault active) | – | – | – | ${outside('repeat')} | ${outside('500')} | ${outside('hang')} |`);
  lines.push('');
  lines.push(
    `${load.answers.length} requests (${[...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${n} × ${s || 'no answer'}`)
      .join(', ')}), ` +
      `${ids} ids handed out (${load.directPops} by the direct consumer's FCALL idpool_pop, ${load.directErrors} of its calls refused or failed), ` +
      `${finalWaste ?? 'unknown'} ids wasted in all (reserved in SQL, neither handed out nor pooled at the end), ` +
      `${nemesis.injections.length} faults, ${findings.filter((f) => f.kind === 'repeat').length} ids repeated, ${load.orderBreaks.length} order breaks.`,
  );
  const numberFindings = (k: Finding['kind']) => findings.filter((f) => f.kind === k).length;
  lines.push(
    '',
    `Business numbers: ${numberFindings('misdated')} misdated, ${numberFindings('restart')} periods not restarting at 1 undisturbed; ${numberLines.join('; ')}.`,
  );
  const behind = nemesis.behindAfterRestore.map((ms) =>
    ms === undefined ? 'still at the end' : `${(ms / 1000).toFixed(1)} s`,
  );
  if (behind.length || nemesis.heldBack)
    lines.push(
      '',
      (behind.length
        ? `After each restore the database stayed behind some entity's Redis fence for ${behind.join(', ')}; `
        : 'No restore; ') +
        `${nemesis.heldBack} faults drawn meanwhile or within 30 s of a Redis data loss were held back (both records of the issued ids lost would repeat them whatever idpool does).`,
    );
  console.log(`\n${lines.join('\n')}\n`);
  for (const f of findings) console.log(`FINDING ${f.kind} at ${((f.at - t0) / 1000).toFixed(1)} s: ${f.text}`);
  for (const p of nemesis.problems) console.log(`NEMESIS ${p}`);
  console.log(findings.length || nemesis.problems.length ? 'chaos: FAILED' : 'chaos: passed');
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
