/**
 * Snowflake generator throughput, side by side in one process:
 * idpool's generator, nodejs-snowflake, @sapphire/snowflake, flake-idgen and
 * a plain BigInt baseline. 5M ids each after warm-up, median of 3 rounds,
 * plus each one's duplicates in 1M ids. Not a test: it prints, asserts nothing.
 *
 *   npx tsx bench/snowflake.bench.ts        (or: npm run bench -- snowflake)
 *
 * The 2-core machine is shared, so compare ratios within one run.
 */
import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- flake-idgen is CommonJS with no types of its own
const FlakeId = require('flake-idgen');
import { Snowflake as NodejsSnowflake } from 'nodejs-snowflake';
import type { Clock } from '../src/clock';
import { systemClock } from '../src/clock';
import { Snowflake } from '../src/snowflake/snowflake';

const N = Number(process.env.BENCH_IDS ?? 5_000_000);
const WARMUP = 500_000;
const ROUNDS = 3;
const DUP_SAMPLE = 1_000_000;
const EPOCH = Date.UTC(2024, 0, 1);

interface Case {
  name: string;
  /** Makes one id; the value is kept so the work is not optimised away. */
  next: () => unknown;
  /** The id as a comparable key, for the duplicate count. */
  key?: (id: unknown) => string | bigint | number;
  note?: string;
}

let sink: unknown;
function rate(next: () => unknown, n: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink = next();
  const ns = Number(process.hrtime.bigint() - start);
  return n / (ns / 1e9);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function duplicates(c: Case): number {
  const seen = new Set<string | bigint | number>();
  let dup = 0;
  const key = c.key ?? ((id) => id as bigint);
  for (let i = 0; i < DUP_SAMPLE; i++) {
    const k = key(c.next());
    if (seen.has(k)) dup++;
    else seen.add(k);
  }
  return dup;
}

/**
 * The real clock, moved one second ahead each time 2^22 ids were asked
 * for: the 22-sequence-bit layout counts in seconds, whose cap (4.19M ids/s)
 * would otherwise hide the generator's own speed. Date.now() is still read
 * on every id, as in the baseline.
 */
function compressedSecondsClock(perSecond: number): Clock {
  let reads = 0;
  let offset = 0;
  return {
    ...systemClock,
    now() {
      if (++reads === perSecond) {
        reads = 0;
        offset += 1000;
      }
      return Date.now() + offset;
    },
  };
}

function main(): void {
  // 41 ms bits / 10 worker / time-back / 11 sequence: docs/design.md's default layout, cap 2,048,000 ids/s.
  const idpoolDefault = new Snowflake({ workerId: 1 });
  // 41 ms bits / 9 worker / time-back / 12 sequence: 4,096 ids per ms, cap 4,096,000 ids/s.
  const idpool12 = new Snowflake({ workerId: 1, layout: { timestampBits: 41, workerBits: 9 } });
  // 37 s bits / 3 worker / time-back / 22 sequence (seconds: the only units that leave 22 bits).
  const layout22 = { timeUnit: 's' as const, timestampBits: 37, workerBits: 3 };
  const idpool22Big = new Snowflake({ workerId: 1, layout: layout22, clock: compressedSecondsClock(2 ** 22) });
  const idpool22Num = new Snowflake({ workerId: 1, layout: layout22, clock: compressedSecondsClock(2 ** 22) });
  const nodejs = new NodejsSnowflake({ custom_epoch: EPOCH, instance_id: 1 });
  const sapphire = new SapphireSnowflake(EPOCH);
  const flake = new FlakeId({ id: 1, epoch: EPOCH });
  const flakeNext = (): Buffer => {
    // Its sync next() throws when a ms has no sequence left: retry, as a caller must.
    for (;;) {
      try {
        return flake.next();
      } catch {
        // spin into the next millisecond
      }
    }
  };
  let seq = 0;
  const baselineBig = () => (BigInt(Date.now() - EPOCH) << 22n) | BigInt(seq++ & 0x3fffff);
  // Seconds since 2024 × 2^26 (3 worker bits, time-back, 22 sequence bits) stays below 2^53 until 2028.
  const baselineNum = () => Math.floor((Date.now() - EPOCH) / 1000) * 67108864 + (seq++ & 0x3fffff);

  const cases: Case[] = [
    { name: 'idpool 41ms/10w/11seq (bigint)', next: () => idpoolDefault.nextId(), note: 'cap 2,048,000/s' },
    { name: 'idpool 41ms/9w/12seq (bigint)', next: () => idpool12.nextId(), note: 'cap 4,096,000/s' },
    { name: 'idpool 37s/3w/22seq (bigint)', next: () => idpool22Big.nextId(), note: 'clock advanced 1 s per 2^22 ids' },
    {
      name: 'idpool 37s/3w/22seq (number)',
      next: () => idpool22Num.nextNumber(),
      note: 'clock advanced 1 s per 2^22 ids',
    },
    { name: 'nodejs-snowflake 2.0.1', next: () => nodejs.getUniqueID(), key: (id) => id as bigint },
    { name: '@sapphire/snowflake 3.5.5', next: () => sapphire.generate({ workerId: 1n }) },
    { name: 'flake-idgen 1.4.0', next: flakeNext, key: (b) => (b as Buffer).readBigUInt64BE() },
    { name: 'plain BigInt baseline', next: baselineBig, note: 'no uniqueness guarantee' },
    { name: 'plain number baseline', next: baselineNum, note: 'no uniqueness guarantee' },
  ];

  for (const c of cases) rate(c.next, WARMUP);
  const results = cases.map((c) => {
    const rounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      (globalThis as { gc?: () => void }).gc?.();
      rounds.push(rate(c.next, N));
    }
    return { c, ids: median(rounds), rounds };
  });
  const dups = cases.map((c) => duplicates(c));

  const fmt = (x: number) => `${(x / 1e6).toFixed(2)}M`;
  const base = results.find((r) => r.c.name === 'plain BigInt baseline')!.ids;
  const baseNum = results.find((r) => r.c.name === 'plain number baseline')!.ids;
  console.log(
    `\n${N.toLocaleString('en')} ids per round, median of ${ROUNDS} (after ${WARMUP.toLocaleString('en')} warm-up); duplicates in ${DUP_SAMPLE.toLocaleString('en')} ids\n`,
  );
  console.log(
    `${'generator'.padEnd(34)} ${'ids/s'.padStart(9)} ${'rounds'.padStart(22)} ${'vs BigInt'.padStart(10)} ${'dups'.padStart(8)}  note`,
  );
  results.forEach(({ c, ids, rounds }, k) => {
    console.log(
      `${c.name.padEnd(34)} ${fmt(ids).padStart(9)} ${rounds.map(fmt).join(' ').padStart(22)} ${(ids / base).toFixed(2).padStart(10)} ${String(dups[k]).padStart(8)}  ${c.note ?? ''}`,
    );
  });
  // How fast the loop runs decides whether a package repeats within 1M ids. @sapphire/snowflake's
  // 12-bit increment wraps without waiting for the next ms: give it one ms (as a fast enough
  // machine would) and see how many of 1M ids are distinct.
  const pinned = new Set<bigint>();
  const oneMs = Date.now();
  for (let i = 0; i < DUP_SAMPLE; i++) pinned.add(sapphire.generate({ timestamp: oneMs, workerId: 1n }));
  console.log(
    `\n@sapphire/snowflake within one millisecond: ${pinned.size.toLocaleString('en')} distinct of ${DUP_SAMPLE.toLocaleString('en')} ids (${(DUP_SAMPLE - pinned.size).toLocaleString('en')} repeats); idpool waits for the next unit instead`,
  );
  const r12 = results[1].ids;
  const r22b = results[2].ids;
  const r22n = results[3].ids;
  console.log(
    `\n41/12 layout: ${fmt(r12)} ids/s = ${(r12 / 4_096_000).toFixed(3)} × the 4,096,000 ids/s sequence cap (target ≥ 0.99)`,
  );
  console.log(
    `41/11 default: ${fmt(results[0].ids)} ids/s = ${(results[0].ids / 2_048_000).toFixed(3)} × its 2,048,000 ids/s cap`,
  );
  console.log(
    `22-bit layout: bigint ${fmt(r22b)} ids/s (${(r22b / base).toFixed(2)} × BigInt baseline; target ≥ 10M), number ${fmt(r22n)} ids/s (${(r22n / baseNum).toFixed(2)} × number baseline; target ≥ 20M)`,
  );
  console.log(`last id made: ${String(sink)}`);
}

main();
