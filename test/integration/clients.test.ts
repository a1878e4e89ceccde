/**
 * The Java, Python and Go clients (clients/) against one real deployment: two
 * instances on a private Redis and a schema of the shared MariaDB. Each
 * language's check program (clients/LANG/…: same modes in all three) is built
 * once and run here; the ids it took are written to a file this test reads, so
 * uniqueness and spacing are judged here, over every language at once.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithServices } from '../support/describe-with-services';
import { uniqueKey } from '../support/configs';
import { call, parseMetrics, register } from '../support/http';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';
import type { Instance } from '../support/processes';
import { IdpoolClient, IdpoolUnavailableError } from '../../src/client';
import { type ClientLanguage, type ClientRun, buildClientLanguages, runClient, runUnitTests } from '../support/clients';
import { type Front, startFront } from '../support/front';

/** The leased entity's spacing: every id it hands out is ≡ REMAINDER (mod DELTA). */
const DELTA = 7;
const REMAINDER = 3;
/** The business-number entity's template, and what its numbers look like. */
const NUMBER_FORMAT = 'CL{yyyy}{MM}{dd}-{seq:6}';
const NUMBER_SHAPE = /^CL\d{8}-\d{6}$/;
/**
 * A business-number entity whose period is spent after 9 takes: yearly, so the period a run spends never ends
 * under it (every later take answers 503 period_exhausted, Retry-After: the seconds to next year).
 */
const SPENT_FORMAT = 'X{yyyy}-{seq:1}';
/** The gapless series' template (docs/numbers.md "Gapless series"): yearly, so a run never spans two periods. */
const GAPLESS_FORMAT = 'GL{yyyy}-{seq:6}';

/** The `gapless <reference> <number>` lines of a program's output, as reference → numbers. */
function gaplessLines(output: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [, reference, n] of output.matchAll(/^gapless (\S+) (\S+)$/gm))
    out.set(reference, [...(out.get(reference) ?? []), n]);
  return out;
}

/** Waits until `run` has printed `line`, or fails with its output when it exits first. */
async function said(run: ClientRun, line: string, name: string): Promise<void> {
  while (!run.output().includes(`${line}\n`)) {
    const exited = await Promise.race([run.exited.then(() => true), new Promise((r) => setTimeout(r, 50, false))]);
    if (exited && !run.output().includes(`${line}\n`))
      throw new Error(`${name} exited before "${line}":\n${run.output()}`);
  }
}

/** `t <id>` (taken over HTTP) and `l <id>` (leased) lines of a check program's output file. */
function readIds(file: string): { taken: bigint[]; leased: bigint[] } {
  const taken: bigint[] = [];
  const leased: bigint[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const [kind, id] = line.split(' ');
    (kind === 't' ? taken : leased).push(BigInt(id));
  }
  return { taken, leased };
}

describeWithServices(
  'Java, Python and Go clients against two instances',
  { mysql: true, clientToolchains: true },
  () => {
    let dir: string;
    let langs: ClientLanguage[];
    let deployment: PrivateDeployment;
    let a: Instance;
    let b: Instance;
    const keys = {
      take: uniqueKey('cl-take'),
      lease: uniqueKey('cl-lease'),
      limited: uniqueKey('cl-limited'),
      flake: uniqueKey('cl-flake'),
      numbers: uniqueKey('cl-numbers'),
      gapless: uniqueKey('cl-gapless'),
    };
    /** A business-number entity per language and the TS SDK, each spent by its client (SPENT_FORMAT). */
    const spentKeys = Object.fromEntries(
      (['java', 'python', 'go', 'ts'] as const).map((lang) => [lang, uniqueKey(`cl-spent-${lang}`)]),
    );
    const spentSecrets: Record<string, string> = {};
    /**
     * In front of A for the gapless takes: the first attempt of each Idempotency-Key reaches A, which issues
     * the numbers, and its answer is dropped (a connection cut on the way back); later attempts pass.
     */
    let front: Front;
    const dropped = new Set<string>();
    /** The gapless series' ledger, as reference → numbers (its yearly period, by the database's clock). */
    const ledger = async () => {
      const page = await call(`${a.url}/apps/${keys.gapless}/numbers?limit=1000`, { token: env.GAPLESS_SECRET });
      expect(page.status).toBe(200);
      const out = new Map<string, string[]>();
      for (const row of page.body.numbers as { number: string; reference: string | null }[])
        out.set(String(row.reference), [...(out.get(String(row.reference)) ?? []), row.number]);
      return out;
    };
    /** A trend entity registered with the defaults (5,000 ids a second) for each language and the TS SDK. */
    const trendKeys = Object.fromEntries(
      (['java', 'python', 'go', 'ts'] as const).map((lang) => [lang, uniqueKey(`cl-trend-${lang}`)]),
    );
    const trendSecrets: Record<string, string> = {};
    let env: Record<string, string>;
    /**
     * Every id any program took, over all the tests, per entity: none may come twice. Per entity, since the two lines
     * are separate: the taken entity's 3 and the leased entity's first id ≡ 3 (mod 7) are different ids.
     */
    const seen = { taken: new Set<bigint>(), leased: new Set<bigint>() };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'idpool-clients-'));
      // The builds run while the deployment starts.
      [langs, deployment] = await Promise.all([
        buildClientLanguages(dir, ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC']),
        privateDeployment(),
      ]);
      // One after the other: two start-ups at once on a loaded 2-core machine each take twice as long.
      a = await deployment.start();
      b = await deployment.start();
      front = await startFront(a.url, (req) => {
        const key = req.idempotencyKey;
        if (key === undefined || dropped.has(key)) return { kind: 'forward' };
        dropped.add(key);
        return { kind: 'forward', drop: true };
      });
      const [take, lease, limited, flake, numbers, gapless] = await Promise.all([
        register(a.url, { key: keys.take, mode: 'monotonic', step: 500, maxSizePerSecond: 0 }),
        register(a.url, {
          key: keys.lease,
          mode: 'trend',
          step: 500,
          maxSizePerSecond: 0,
          delta: DELTA,
          remainder: REMAINDER,
        }),
        register(a.url, { key: keys.limited, mode: 'trend', maxSizePerTimes: 10, maxSizePerSecond: 10 }),
        register(a.url, { key: keys.flake, mode: 'snowflake' }),
        register(a.url, { key: keys.numbers, format: NUMBER_FORMAT }),
        register(a.url, { key: keys.gapless, format: GAPLESS_FORMAT, gapless: true }),
      ]);
      for (const [lang, key] of Object.entries(trendKeys))
        trendSecrets[lang] = await register(a.url, { key, mode: 'trend' });
      for (const [lang, key] of Object.entries(spentKeys))
        spentSecrets[lang] = await register(a.url, { key, format: SPENT_FORMAT });
      env = {
        TAKE_KEY: keys.take,
        TAKE_SECRET: take,
        LEASE_KEY: keys.lease,
        LEASE_SECRET: lease,
        LIMITED_KEY: keys.limited,
        LIMITED_SECRET: limited,
        FLAKE_KEY: keys.flake,
        FLAKE_SECRET: flake,
        NUMBER_KEY: keys.numbers,
        NUMBER_SECRET: numbers,
        GAPLESS_KEY: keys.gapless,
        GAPLESS_SECRET: gapless,
        GAPLESS_ENDPOINTS: `${front.url},${b.url}`,
        // Small leases, so each run takes many and threads meet at segment switches.
        LEASE_MIN: '500',
        LEASE_MAX: '4000',
      };
    });

    afterAll(async () => {
      await front?.close();
      await deployment?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Each language's program in `mode` over both instances, with the shared env and `extra` of its language. */
    const runEach = (mode: string, extra: (lang: ClientLanguage['name']) => Record<string, string>) =>
      langs.map((lang) => ({
        lang,
        run: runClient(lang, mode, { ...env, IDPOOL_ENDPOINTS: `${a.url},${b.url}`, ...extra(lang.name) }),
      }));

    /** Checks one program's ids: none seen before, the leased ones ≡ REMAINDER (mod DELTA). */
    const account = (name: string, ids: { taken: bigint[]; leased: bigint[] }) => {
      for (const kind of ['taken', 'leased'] as const)
        for (const id of ids[kind]) {
          if (seen[kind].has(id)) throw new Error(`${name}: ${kind} id ${id} handed out twice`);
          seen[kind].add(id);
        }
      const offSpacing = ids.leased.filter((id) => id % BigInt(DELTA) !== BigInt(REMAINDER));
      expect(offSpacing, `${name}: leased ids not ≡ ${REMAINDER} (mod ${DELTA})`).toEqual([]);
    };

    it('8 threads or goroutines per language over both instances: every id unique, leased ids ≡ remainder (mod delta)', async () => {
      const TAKES = 10;
      const LEASED = 5000;
      const runs = langs.map((lang) => {
        const out = join(dir, `${lang.name}-unique.txt`);
        return {
          lang,
          out,
          run: runClient(lang, 'unique', {
            ...env,
            IDPOOL_ENDPOINTS: `${a.url},${b.url}`,
            OUT: out,
            TAKES: String(TAKES),
            LEASED: String(LEASED),
          }),
        };
      });
      for (const { lang, out, run: r } of runs) {
        expect(await r.exited, `${lang.name}:\n${r.output()}`).toBe(0);
        expect(r.output()).toContain('done\n');
        const ids = readIds(out);
        expect(ids.taken).toHaveLength(8 * TAKES * 5);
        expect(ids.leased).toHaveLength(8 * LEASED);
        account(lang.name, ids);
        // 40,000 ids over leases of 500 to 4,000: the double buffer turned over many times.
        const leases = Number(/leases (\d+)/.exec(r.output())?.[1]);
        expect(leases, lang.name).toBeGreaterThanOrEqual(10);
      }
      // Both instances served takes (each client asks its first endpoint; half the threads list B first).
      for (const instance of [a, b]) {
        const metrics = parseMetrics(await (await fetch(`${instance.url}/metrics`)).text());
        expect(metrics.get(`idpool_ids_served_total{entity="${keys.take}"}`), instance.url).toBeGreaterThan(0);
      }
    });

    it('typed errors carry the service codes and the last real answer; Retry-After is obeyed, by leases too; one Idempotency-Key a take; business numbers as strings; gapless numbers with a reference, one key through a dropped answer; snowflake ids decode', async () => {
      const runs = runEach('errors', (lang) => ({ TREND_KEY: trendKeys[lang], TREND_SECRET: trendSecrets[lang] }));
      const numbers: string[] = [];
      for (const { lang, run: r } of runs) {
        expect(await r.exited, `${lang.name}:\n${r.output()}`).toBe(0);
        const taken = [...r.output().matchAll(/^number (\S+)$/gm)].map((m) => m[1]);
        // 3 + 1 through the number takes, 2 held by the integer take's error.
        expect(taken, lang.name).toHaveLength(6);
        for (const n of taken) expect(n, lang.name).toMatch(NUMBER_SHAPE);
        numbers.push(...taken);
        for (const check of [
          'unauthorized',
          'unknown_entity',
          'decode_refused',
          'conflict',
          'invalid_request',
          'rate_limited',
          'decode',
          'retry_after',
          'rate_limit_wait',
          'unavailable',
          'last_answer',
          'one_key',
          'lease_waits',
          'numbers',
          'leased_default_trend',
          'gapless',
        ])
          expect(r.output(), lang.name).toContain(`ok ${check}\n`);
      }
      expect(new Set(numbers).size, 'a business number handed out twice').toBe(numbers.length);
      // Gapless: each take's first attempt was issued and its answer dropped; the retry, with the same key, was
      // answered those numbers. So the ledger holds exactly what each program was answered, under its reference:
      // no number issued to a retry nobody heard of, none to the refused third reference.
      const inLedger = await ledger();
      for (const { lang, run: r } of runs) {
        const got = gaplessLines(r.output());
        expect(got.get(`inv-${lang.name}-1`), lang.name).toHaveLength(2);
        expect(got.get(`inv-${lang.name}-2`), lang.name).toHaveLength(1);
        for (const reference of [1, 2, 3].map((n) => `inv-${lang.name}-${n}`))
          expect(inLedger.get(reference), reference).toEqual(got.get(reference));
      }
    });

    it('the TypeScript SDK: business numbers as strings; gapless numbers with a reference and one key through a dropped answer; leased ids of a default trend entity past its 429s and 400s', async () => {
      const client = new IdpoolClient({
        endpoints: [a.url, b.url],
        entities: {
          [keys.numbers]: { secret: env.NUMBER_SECRET },
          [trendKeys.ts]: { secret: trendSecrets.ts, mode: 'trend', lease: { ids: 'number', waitMs: 15_000 } },
        },
      });
      try {
        const numbers = await client.take(keys.numbers, 3);
        for (const n of numbers) expect(n).toMatch(NUMBER_SHAPE);
        await expectGaplessTakes();
        // 12,000 ids: leases of 1,000, 2,000 and 4,000, one over the second's 5,000 (429), then 8,000 (400).
        const ids: (number | bigint)[] = await client.leased(trendKeys.ts).take(12_000);
        expect(new Set(ids).size).toBe(12_000);
      } finally {
        client.close();
      }
    });

    /**
     * The TypeScript SDK's gapless takes through the dropping front, as the other programs' (their `gapless`
     * check); then the whole ledger: every number has its taker's reference, and the audit shows no hole.
     */
    const expectGaplessTakes = async () => {
      const gaplessClient = new IdpoolClient({
        endpoints: [front.url, b.url],
        entities: { [keys.gapless]: { secret: env.GAPLESS_SECRET } },
      });
      try {
        const first = await gaplessClient.take(keys.gapless, 2, { reference: 'inv-ts-1' });
        const mine = `ts-${keys.gapless}`;
        const second = await gaplessClient.take(keys.gapless, 1, { reference: 'inv-ts-2', idempotencyKey: mine });
        expect(await gaplessClient.take(keys.gapless, 1, { reference: 'inv-ts-2', idempotencyKey: mine })).toEqual(
          second,
        );
        const refused = await gaplessClient
          .take(keys.gapless, 1, { reference: 'inv-ts-3', idempotencyKey: mine })
          .catch((e: unknown) => e);
        expect(refused).toMatchObject({ status: 409, code: 'conflict' });
        const inLedger = await ledger();
        expect(inLedger.get('inv-ts-1')).toEqual(first);
        expect(inLedger.get('inv-ts-2')).toEqual(second);
        expect(inLedger.has('inv-ts-3')).toBe(false);
        // Four takers (Java, Python, Go, this SDK), three numbers each. Each taker's first take had its answer
        // dropped (then it stays on B, which answered): four numbers issued, retried with their key, answered once.
        expect([...inLedger.values()].flat()).toHaveLength(12);
        expect([...inLedger.keys()].sort()).toEqual(
          ['go', 'java', 'python', 'ts'].flatMap((l) => [`inv-${l}-1`, `inv-${l}-2`]).sort(),
        );
        expect(dropped.size).toBe(4);
        const audit = await call(`${a.url}/apps/${keys.gapless}/numbers/audit`, { token: env.GAPLESS_SECRET });
        expect(audit.body).toMatchObject({ issued: 12, holes: [], duplicates: [] });
      } finally {
        gaplessClient.close();
      }
    };

    it("each client's own tests (fake instances): a 503 about one entity never marks an endpoint down", async () => {
      // One after the other: the machine has two cores and the Go tests compile first.
      for (const lang of langs) expect(await runUnitTests(lang), lang.name).toBeDefined();
    });

    it("one entity's spent period (503 period_exhausted on both instances) ends its takes at once and never blocks another entity of the same client", async () => {
      const runs = runEach('spent', (lang) => ({ SPENT_KEY: spentKeys[lang], SPENT_SECRET: spentSecrets[lang] }));
      const client = new IdpoolClient({
        endpoints: [a.url, b.url],
        entities: { [spentKeys.ts]: { secret: spentSecrets.ts }, [keys.take]: { secret: env.TAKE_SECRET } },
      });
      try {
        const numbers: string[] = [];
        let refusal: unknown;
        while (refusal === undefined && numbers.length < 20)
          await client.take(spentKeys.ts, 1).then(
            (n) => numbers.push(...n),
            (e: unknown) => (refusal = e),
          );
        expect(numbers).toHaveLength(9);
        expect(refusal).toBeInstanceOf(IdpoolUnavailableError);
        const err = refusal as IdpoolUnavailableError;
        expect([err.refused, err.lastAnswer?.status, err.lastAnswer?.code]).toEqual([true, 503, 'period_exhausted']);
        expect(err.message).toMatch(/^idpool unavailable: http:\/\/\S+: 503 period_exhausted: /);
        // The seconds to next year, as the service said them (not capped at the 30 s the client would wait).
        expect(err.lastAnswer?.retryAfterMs).toBeGreaterThan(30_000);
        for (let i = 0; i < 3; i++) {
          const again = await client.take(spentKeys.ts, 1).catch((e: unknown) => e);
          expect(again).toMatchObject({ refused: true, attempts: [expect.anything()] });
        }
        const start = performance.now();
        expect(await client.take(keys.take, 1)).toHaveLength(1);
        expect(performance.now() - start).toBeLessThan(1000);
      } finally {
        client.close();
      }
      for (const { lang, run: r } of runs) {
        expect(await r.exited, `${lang.name}:\n${r.output()}`).toBe(0);
        expect(r.output(), lang.name).toContain('ok spent\n');
        expect([...r.output().matchAll(/^number X\d{4}-\d$/gm)], lang.name).toHaveLength(9);
      }
    });

    it('fails over to the survivor when one instance is killed (kill -9) between two phases', async () => {
      const TAKES = 10;
      const LEASED = 3000;
      const runs = langs.map((lang) => {
        const out = join(dir, `${lang.name}-failover.txt`);
        return {
          lang,
          out,
          // A first: each client asks it while it answers, so phase 2 starts on a dead endpoint.
          run: runClient(lang, 'failover', {
            ...env,
            IDPOOL_ENDPOINTS: `${a.url},${b.url}`,
            OUT: out,
            TAKES: String(TAKES),
            LEASED: String(LEASED),
          }),
        };
      });
      for (const { lang, run: r } of runs) await said(r, 'phase done', lang.name);
      await a.kill9();
      expect(a.proc.signalCode).toBe('SIGKILL');
      for (const { run: r } of runs) r.proc.stdin?.end('go on\n');
      for (const { lang, out, run: r } of runs) {
        expect(await r.exited, `${lang.name}:\n${r.output()}`).toBe(0);
        const ids = readIds(out);
        // Phase 2 (after the kill) took as many as phase 1: over HTTP and in new leases, all through B.
        expect(ids.taken).toHaveLength(2 * 4 * TAKES * 5);
        expect(ids.leased).toHaveLength(2 * 4 * LEASED);
        account(lang.name, ids);
      }
      expect(b.proc.exitCode).toBeNull();
    });
  },
);
