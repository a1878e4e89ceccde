/**
 * The chaos run's business-number entities (issue 35): two, whose
 * fixed-offset zones put a period boundary inside the run (a daily one a
 * minute or two in, an hourly one a minute later), and the checker of what
 * their clients saw: no number twice, none dated outside the period the
 * deciding clock (the Redis server's, this machine's) was in while its take
 * ran, no old-period number after a new-period one, and each new period's
 * sequence starting again at 1.
 */
import type { Cluster, Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { numberKeys } from '../../src/redis/keys';
import type { EntitySpec } from './load';

/** A business-number entity's template, in the order its tokens are read back. */
export interface NumberShape {
  readonly zone: string;
  /** The boundary inside the run (Unix ms, a whole minute). */
  readonly boundary: number;
  /** The period id (`yyyyMMdd` or `yyyyMMddHH`, zone time) of a number. */
  periodOf(number: string): string;
  seqOf(number: string): number;
  /** The period id of instant `ms`. */
  periodAt(ms: number): string;
}

/** `±HH:MM` of a signed number of minutes. */
function offsetZone(minutes: number): string {
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** `yyyyMMddHH` of `ms` in a zone `minutes` ahead of UTC. */
function zoneDigits(ms: number, minutes: number): string {
  return new Date(ms + minutes * 60_000).toISOString().slice(0, 13).replace(/[-T]/g, '');
}

/**
 * The boundaries of a run of `minutes` starting about now: the daily one 65–125 s
 * away (a whole minute), the hourly one a minute after it, or before it when
 * that would be too close to the end.
 */
export function runBoundaries(now: number, minutes: number): [number, number] {
  const first = Math.ceil((now + 65_000) / 60_000) * 60_000;
  return [first, first + 60_000 <= now + minutes * 60_000 - 10_000 ? first + 60_000 : first - 60_000];
}

/** The two entities: a daily monotonic one and an hourly trend one, with their boundaries (whole minutes). */
export function numberSpecs(
  runTag: string,
  [firstBoundary, hourBoundary]: [number, number],
): { spec: EntitySpec; shape: NumberShape }[] {
  // A daily period ends at zone midnight: the offset that makes `firstBoundary` midnight (within ±14:00).
  let daily = ((-Math.round(firstBoundary / 60_000) % 1440) + 1440) % 1440;
  if (daily > 14 * 60) daily -= 1440;
  // An hourly period ends at a zone hour: an offset of whole minutes under an hour makes that minute one.
  const hourly = (60 - (Math.round(hourBoundary / 60_000) % 60)) % 60;
  const B = 'B{yyyy}{MM}{dd}-{seq:7}';
  const H = 'H{yyyy}{MM}{dd}{HH}{seq:8}';
  return [
    {
      spec: {
        key: `chaos-${runTag}-n0-daily`,
        mode: 'monotonic',
        pauseMs: 150,
        maxBatch: 100,
        registration: { mode: 'monotonic', format: B, timeZone: offsetZone(daily), step: 100, maxSizePerSecond: 0 },
        numbers: true,
      },
      shape: {
        zone: offsetZone(daily),
        boundary: firstBoundary,
        periodOf: (n) => n.slice(1, 9),
        seqOf: (n) => Number(n.slice(10)),
        periodAt: (ms) => zoneDigits(ms, daily).slice(0, 8),
      },
    },
    {
      spec: {
        key: `chaos-${runTag}-n1-hourly`,
        mode: 'trend',
        pauseMs: 200,
        maxBatch: 1000,
        registration: { mode: 'trend', format: H, timeZone: offsetZone(hourly), step: 500, maxSizePerSecond: 0 },
        numbers: true,
      },
      shape: {
        zone: offsetZone(hourly),
        boundary: hourBoundary,
        periodOf: (n) => n.slice(1, 11),
        seqOf: (n) => Number(n.slice(11)),
        periodAt: (ms) => zoneDigits(ms, hourly),
      },
    },
  ];
}

/** One take of a business-number entity: when it ran (client's clock, Unix ms) and what it got. */
export interface NumberTake {
  readonly start: number;
  readonly end: number;
  readonly numbers: readonly string[];
}

export interface NumberFinding {
  readonly kind: 'repeat' | 'misdated' | 'order' | 'restart';
  readonly at: number;
  readonly text: string;
}

/** The refiller fills the next period this long before its boundary (`REDIS_PREFILL_LEAD_MS` of pool/period-pools.ts). */
const PREFILL_LEAD_MS = 60_000;

/** How far the Redis server's clock may be from this process's when both are this machine's: a take's own latency is inside [start, end]. */
const MARGIN_MS = 5;

/**
 * Checks one entity's takes (its one sequential client's, in order).
 * `faultBetween(from, to)` says whether a fault was active in that span. A
 * new period's lowest sequence must be 1 when no fault was active from a
 * minute before the boundary (when its numbers are filled ahead) to just
 * after it; a fault then may drop those numbers with the lists (a Redis
 * data loss, a failover, a restored database carried past its fence): gaps
 * are allowed, so the lowest is only reported.
 */
export function checkNumbers(
  key: string,
  shape: NumberShape,
  takes: readonly NumberTake[],
  monotonic: boolean,
  faultBetween: (from: number, to: number) => boolean,
): { findings: NumberFinding[]; summary: string } {
  const findings: NumberFinding[] = [];
  const seen = new Map<string, number>();
  let lastPeriod = '';
  let lastSeq = 0;
  const lowest = new Map<string, number>();
  const highest = new Map<string, number>();
  for (const t of takes) {
    const allowed = new Set([shape.periodAt(t.start - MARGIN_MS), shape.periodAt(t.end + MARGIN_MS)]);
    for (const n of t.numbers) {
      if (seen.has(n)) findings.push({ kind: 'repeat', at: t.end, text: `${key}: ${n} handed out twice` });
      seen.set(n, t.end);
      const period = shape.periodOf(n);
      if (!allowed.has(period))
        findings.push({
          kind: 'misdated',
          at: t.end,
          text: `${key}: ${n} (period ${period}) taken between ${new Date(t.start).toISOString()} and ${new Date(t.end).toISOString()}, in period ${[...allowed].join('/')}`,
        });
      if (period < lastPeriod)
        findings.push({
          kind: 'order',
          at: t.end,
          text: `${key}: ${n} of period ${period} after one of ${lastPeriod}`,
        });
      const seq = shape.seqOf(n);
      if (monotonic && period === lastPeriod && seq <= lastSeq)
        findings.push({ kind: 'order', at: t.end, text: `${key}: ${n} after sequence ${lastSeq} of the same period` });
      if (period >= lastPeriod) [lastPeriod, lastSeq] = [period, seq];
      lowest.set(period, Math.min(lowest.get(period) ?? Infinity, seq));
      highest.set(period, Math.max(highest.get(period) ?? 0, seq));
    }
  }
  const after = shape.periodAt(shape.boundary);
  const low = lowest.get(after);
  const disturbed = faultBetween(shape.boundary - PREFILL_LEAD_MS - 5_000, shape.boundary + 5_000);
  if (low === undefined)
    findings.push({ kind: 'restart', at: shape.boundary, text: `${key}: no number of period ${after} was handed out` });
  const before = shape.periodAt(shape.boundary - 1);
  if (low !== undefined && low !== 1 && !disturbed)
    findings.push({
      kind: 'restart',
      at: shape.boundary,
      text: `${key}: period ${after}'s lowest sequence handed out is ${low}, not 1, with no fault around the boundary`,
    });
  return {
    findings,
    summary: `${key} (${shape.zone}): ${seen.size} numbers, boundary ${new Date(shape.boundary).toISOString().slice(11, 19)} from period ${before} (lowest seq ${lowest.get(before) ?? '–'}, highest ${highest.get(before) ?? '–'}) to ${after} (lowest seq ${low ?? '–'})${disturbed ? ', a fault active in the minute before the boundary or at it' : ''}`,
  };
}

/**
 * Whether any business-number entity's counter of a period its slots hold
 * is below what Redis says was pushed (its fence): a restore not yet carried past, when a
 * Redis data loss too would lose both records (the nemesis holds such a
 * fault back, as for plain ids).
 */
export async function numbersBehindFence(
  dbPort: number,
  redis: Redis | Cluster,
  entities: readonly { key: string; numbers?: boolean }[],
): Promise<boolean> {
  const c = await createConnection({
    host: '127.0.0.1',
    port: dbPort,
    user: 'root',
    database: 'idpool',
    connectTimeout: 2000,
  });
  try {
    for (const e of entities) {
      if (!e.numbers) continue;
      const keys = numberKeys(e.key);
      // Only the periods the two slots hold can still be handed out; an ended period's fence stays above a restored row.
      const { p0, p1 } = await redis.hgetall(keys.periods);
      const live = new Set([p0, p1]);
      const fences = Object.fromEntries(
        Object.entries(await redis.hgetall(keys.fence)).filter(([period]) => live.has(period)),
      );
      const [rows] = (await c.query(
        'SELECT period AS p, CAST(seq AS CHAR) AS s FROM number_period WHERE entity_key = ?',
        [e.key],
      )) as unknown as [{ p: string; s: string }[]];
      for (const [period, fence] of Object.entries(fences)) {
        const row = rows.find((r) => r.p === period);
        if (BigInt(row?.s ?? '0') < BigInt(fence)) return true;
      }
    }
    return false;
  } finally {
    await c.end();
  }
}
