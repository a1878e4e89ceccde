/**
 * The SQL of a gapless series (docs/numbers.md "Gapless series"): the
 * period's counter (`gapless_counter`) and its ledger (`gapless_number`),
 * always written in one transaction. A take reads the database's clock and
 * the takes' keys, moves the counter (the row lock that orders every take
 * of the period), checks it against the high-water record and writes one
 * ledger row per number; on MySQL/MariaDB the counter's new value comes
 * back through `LAST_INSERT_ID(seq + n)`, elsewhere through `RETURNING`.
 */
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { classifySqlError } from '../db/errors';
import { ConflictError, NotFoundError, PeriodExhaustedError, UnavailableError } from '../errors';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import { LedgerBehindError } from './errors';
import type { GaplessHighWater } from './high-water';
import type { SqlRow, Statement, Transactions, Tx } from './transaction';

/** One take of a group: how many, and what the ledger keeps of it. */
export interface LedgerTake {
  readonly count: number;
  readonly idempotencyKey?: string;
  readonly reference?: string;
}

/** Where a take's numbers are in the ledger: `count` sequences of `period` from `first`. */
export interface LedgerSpan {
  readonly period: string;
  readonly first: bigint;
  readonly count: number;
  /** Found under the take's Idempotency-Key, written by an earlier take. */
  readonly replayed: boolean;
}

export type LedgerStatus = 'issued' | 'void' | 'lost';

/** One row of the ledger, as the audit shows it. */
export interface LedgerEntry {
  readonly number: string;
  readonly period: string;
  readonly seq: string;
  /** Unix ms by the database's clock. */
  readonly issuedAt: number;
  readonly reference: string | null;
  readonly status: LedgerStatus;
  readonly reason: string | null;
}

/** A period's figures, read from its ledger rows (and the counter beside them). */
export interface LedgerAudit {
  readonly period: string;
  readonly first: string | null;
  readonly last: string | null;
  readonly counter: string;
  readonly issued: number;
  readonly voided: number;
  readonly lost: number;
  /** Sequences from 1 to the counter that have no ledger row, as ranges: always empty. */
  readonly holes: { from: string; to: string }[];
  /** Numbers written twice: always empty. */
  readonly duplicates: string[];
}

/** What a take of the group gets: its span, or why it is refused (another body under its key). */
export type GroupAnswer = LedgerSpan | ConflictError;

/**
 * The group's sum does not fit what is left of the period: the caller
 * answers each take on its own (a take that fits then still gets its numbers).
 */
export class GroupDeclined extends Error {}

/** The ledger's reason for numbers entered lost by a reconcile. */
const LOST_REASON = 'not in the ledger after the database went back; issued before, by the high-water record';

/** Rows per INSERT: 10 parameters each, far below every driver's limit. */
const INSERT_ROWS = 500;

/** Most rows a one-trip group writes (one INSERT of {@link INSERT_ROWS}); a larger group takes the locking path. */
export const ONE_TRIP_ROWS = INSERT_ROWS;

export class SqlLedger {
  private readonly insertCounter: string;

  constructor(
    private readonly db: Database,
    private readonly transactions: Transactions,
    /** The clock of `update_time`, and of lost rows' `issued_at` entered for a period with no counter row. */
    private readonly clock: Pick<Clock, 'now'>,
  ) {
    const [before, after] = db.dialect === 'mysql' ? ['INSERT IGNORE', ''] : ['INSERT', ' ON CONFLICT DO NOTHING'];
    this.insertCounter = `${before} INTO gapless_counter (entity_key, period, seq, update_time) VALUES (?, ?, 0, ?)${after}`;
  }

  /**
   * The takes of one entity in one transaction, in order: those whose key
   * the ledger already holds are answered from it; the others get
   * consecutive sequences of the period the database's clock is in.
   */
  async issue(entityKey: string, scheme: NumberScheme, takes: readonly LedgerTake[], highWater: GaplessHighWater) {
    return this.transactions.transaction(async (tx) => {
      const { now, known } = await this.readNow(tx, entityKey, takes);
      const period = scheme.calendar.at(now);
      const answers: (GroupAnswer | undefined)[] = takes.map((take) => replay(take, known));
      const fresh = takes.filter((_, i) => answers[i] === undefined);
      const total = fresh.reduce((n, t) => n + t.count, 0);
      if (total === 0) return { answers: answers as GroupAnswer[], period, last: undefined };
      const recorded = await highWater.get(entityKey, period.id);
      const last = await this.advance(tx, entityKey, period.id, total, scheme.capacity, takes.length > 1);
      const before = last - BigInt(total);
      if (recorded !== undefined && before < recorded)
        throw LedgerBehindError.behindRecord(entityKey, period.id, before, recorded, highWater.kind);
      const lastRow = await this.lastRow(tx, entityKey, period.id);
      if (lastRow !== before) throw LedgerBehindError.outOfStep(entityKey, period.id, before, lastRow);
      let next = before + 1n;
      const rows: unknown[][] = [];
      const format = scheme.template.formatter(period);
      for (const [i, take] of takes.entries()) {
        if (answers[i] !== undefined) continue;
        answers[i] = { period: period.id, first: next, count: take.count, replayed: false };
        for (let k = 0; k < take.count; k++, next++)
          rows.push([entityKey, period.id, String(next), format(next), now, ...firstOfTake(take, k), 'issued', null]);
      }
      await this.insertRows(tx, rows);
      return { answers: answers as GroupAnswer[], period, last };
    });
  }

  /**
   * The group in one round trip, when the period's counter is still where
   * this instance last left it (`before`): the counter moved from `before`
   * only if it is `before` (the database's clock still in `period`, the
   * ledger's last row at `before` too), and the ledger's rows written only
   * where it moved, in one transaction.
   * Undefined when it was not there, or a key of the group is in the ledger
   * already (a retry, or another take of the same key that committed
   * first): nothing was written, and the locking path ({@link issue})
   * answers the group. Undefined too where the database has no one-trip
   * transaction (SQLite).
   */
  async issueKnown(
    entityKey: string,
    scheme: NumberScheme,
    period: Period,
    takes: readonly LedgerTake[],
    before: bigint,
  ): Promise<LedgerSpan[] | undefined> {
    const inOneTrip = this.transactions.inOneTrip;
    if (!inOneTrip) return undefined;
    const format = scheme.template.formatter(period);
    const spans: LedgerSpan[] = [];
    const rows: OneTripRow[] = [];
    let next = before + 1n;
    for (const take of takes) {
      spans.push({ period: period.id, first: next, count: take.count, replayed: false });
      for (let k = 0; k < take.count; k++, next++) {
        const [key, count, reference] = firstOfTake(take, k) as [string | null, number | null, string | null];
        rows.push({ seq: next.toString(), number: format(next), key, count, reference });
      }
    }
    const moved = { entityKey, period, n: rows.length, before, at: this.clock.now() };
    try {
      const results = await inOneTrip(
        this.db.dialect === 'mysql'
          ? mysqlOneTrip(this.db.nowMs, moved, rows)
          : [postgresOneTrip(this.db, moved, rows)],
      );
      // MySQL: SET, UPDATE, SET, INSERT; PostgreSQL: the one statement's INSERT. All of the rows, or none.
      return results[results.length - 1].affectedRows === rows.length ? spans : undefined;
    } catch (err) {
      const failure = classifySqlError(err);
      if (failure?.class === 'conflict' || failure?.kind === 'deadlock') return undefined;
      throw err;
    }
  }

  /** The database's clock and the ledger's first rows of the takes' keys, in one statement. */
  private async readNow(tx: Tx, entityKey: string, takes: readonly LedgerTake[]) {
    const keys = takes.flatMap((t) => (t.idempotencyKey === undefined ? [] : [t.idempotencyKey]));
    const on = keys.length ? `l.entity_key = ? AND l.idempotency_key IN (${keys.map(() => '?').join(', ')})` : '1 = 0';
    const { rows } = await tx.run(
      `SELECT ${this.db.nowMs} AS now_ms, l.idempotency_key AS k, l.period AS period, ${this.db.bigText('l.seq')} AS seq, l.take_count AS take_count, l.reference AS reference
       FROM (SELECT 1 AS one) d LEFT JOIN gapless_number l ON ${on}`,
      keys.length ? [entityKey, ...keys] : [],
    );
    const known = new Map<string, KnownTake>();
    for (const row of rows)
      if (typeof row.k === 'string')
        known.set(row.k, {
          period: String(row.period),
          first: BigInt(String(row.seq)),
          count: Number(row.take_count),
          reference: row.reference === null ? undefined : String(row.reference),
        });
    return { now: Number(rows[0].now_ms), known };
  }

  /**
   * The period's last ledger row (0 when none), read as committed: under
   * the counter's row lock it is where the counter is, unless the tables
   * went back apart. MySQL/MariaDB read it locking (the transaction's
   * snapshot predates the lock); PostgreSQL's statements each see what is
   * committed; SQLite's transaction holds the file.
   */
  private async lastRow(tx: Tx, entityKey: string, period: string): Promise<bigint> {
    const lock = this.db.dialect === 'mysql' ? ' LOCK IN SHARE MODE' : '';
    const { rows } = await tx.run(
      `SELECT ${this.db.bigText('MAX(seq)')} AS seq FROM gapless_number WHERE entity_key = ? AND period = ?${lock}`,
      [entityKey, period],
    );
    return rows[0]?.seq == null ? 0n : BigInt(String(rows[0].seq));
  }

  /** Moves the period's counter by `n` (creating its row at the period's first take); resolves to its new value. */
  private async advance(tx: Tx, entityKey: string, period: string, n: number, capacity: bigint, group: boolean) {
    // A few rounds at most: the row missing (the period's first take), or another take's row committed between our reads.
    for (let round = 0; round < 4; round++) {
      const last = await this.tryAdvance(tx, entityKey, period, n, capacity);
      if (last !== undefined) return last;
      const { rows } = await tx.run(
        `SELECT ${this.db.bigText('seq')} AS seq FROM gapless_counter WHERE entity_key = ? AND period = ?`,
        [entityKey, period],
      );
      if (rows.length === 0) {
        await tx.run(this.insertCounter, [entityKey, period, this.clock.now()]);
        continue;
      }
      const issued = BigInt(String(rows[0].seq));
      if (issued + BigInt(n) <= capacity) continue;
      if (group) throw new GroupDeclined();
      throw new PeriodExhaustedError(
        `entity "${entityKey}" period ${period}: ${issued} of ${capacity} numbers issued, ${n} more do not fit; the next period starts the sequence again`,
        60,
      );
    }
    throw new UnavailableError(`gapless_counter row of ${entityKey} ${period}: the counter moved under every try`, 1);
  }

  private async tryAdvance(tx: Tx, entityKey: string, period: string, n: number, capacity: bigint) {
    const room = (capacity - BigInt(n)).toString();
    if (this.db.dialect === 'mysql') {
      const result = await tx.run(
        'UPDATE gapless_counter SET seq = LAST_INSERT_ID(seq + ?), update_time = ? WHERE entity_key = ? AND period = ? AND seq <= CAST(? AS SIGNED)',
        [n, this.clock.now(), entityKey, period, room],
      );
      return result.affectedRows === 1 && result.insertId !== undefined ? BigInt(result.insertId) : undefined;
    }
    const { rows } = await tx.run(
      `UPDATE gapless_counter SET seq = seq + CAST(? AS BIGINT), update_time = ? WHERE entity_key = ? AND period = ? AND seq <= CAST(? AS BIGINT) RETURNING ${this.db.bigText('seq')} AS seq`,
      [String(n), this.clock.now(), entityKey, period, room],
    );
    return rows.length === 1 ? BigInt(String(rows[0].seq)) : undefined;
  }

  private async insertRows(tx: Tx, rows: unknown[][]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_ROWS) {
      const chunk = rows.slice(i, i + INSERT_ROWS);
      await tx.run(
        `INSERT INTO gapless_number (entity_key, period, seq, number, issued_at, idempotency_key, take_count, reference, status, reason) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flat(),
      );
    }
  }

  /** Marks an issued number void; a void one stays as it is (its first reason kept); a lost or unknown one is refused. */
  async void(entityKey: string, period: string, seq: bigint, reason: string): Promise<LedgerEntry> {
    await this.db.execute(
      `UPDATE gapless_number SET status = 'void', reason = ?, voided_at = ${this.db.nowMs} WHERE entity_key = ? AND period = ? AND seq = ? AND status = 'issued'`,
      [reason, entityKey, period, seq.toString()],
    );
    const entry = (await this.entries(entityKey, period, seq - 1n, 1)).at(0);
    if (entry?.seq !== seq.toString())
      throw new NotFoundError(`no number of sequence ${seq} was issued in period ${period}`);
    if (entry.status === 'lost')
      throw new ConflictError(
        `number ${entry.number} is entered lost (after a restore): it was never answered here, so it cannot be voided`,
      );
    return entry;
  }

  /** Up to `limit` rows of the period after sequence `after`, in order. */
  async entries(entityKey: string, period: string, after: bigint, limit: number): Promise<LedgerEntry[]> {
    const rows = await this.db.query<SqlRow>(
      // Ordered by the column, not the text of it the select names `seq`.
      `SELECT l.number, l.period, ${this.db.bigText('l.seq')} AS seq, ${this.db.bigText('l.issued_at')} AS issued_at, l.reference, l.status, l.reason
       FROM gapless_number l WHERE l.entity_key = ? AND l.period = ? AND l.seq > ? ORDER BY l.seq LIMIT ${Math.trunc(limit)}`,
      [entityKey, period, after.toString()],
    );
    return rows.map((r) => ({
      number: String(r.number),
      period: String(r.period),
      seq: String(r.seq),
      issuedAt: Number(r.issued_at),
      reference: r.reference === null ? null : String(r.reference),
      status: String(r.status) as LedgerStatus,
      reason: r.reason === null ? null : String(r.reason),
    }));
  }

  /** The period's figures, holes and duplicates computed from its rows. */
  async audit(entityKey: string, period: string): Promise<LedgerAudit> {
    const [[sums], counter, gaps, twice] = await Promise.all([
      this.db.query<SqlRow>(
        `SELECT ${this.db.bigText('MIN(seq)')} AS first, ${this.db.bigText('MAX(seq)')} AS last,
         SUM(CASE WHEN status = 'issued' THEN 1 ELSE 0 END) AS issued, SUM(CASE WHEN status = 'void' THEN 1 ELSE 0 END) AS voided,
         SUM(CASE WHEN status = 'lost' THEN 1 ELSE 0 END) AS lost FROM gapless_number WHERE entity_key = ? AND period = ?`,
        [entityKey, period],
      ),
      this.counter(entityKey, period),
      this.holes(undefined, entityKey, period),
      this.db.query<SqlRow>(
        'SELECT number FROM gapless_number WHERE entity_key = ? AND period = ? GROUP BY number HAVING COUNT(*) > 1',
        [entityKey, period],
      ),
    ]);
    const last = sums.last === null ? 0n : BigInt(String(sums.last));
    const holes = gaps.map((g) => ({ from: g.from.toString(), to: g.to.toString() }));
    // Counted but not in the ledger: what writing the counter and the ledger apart would leave.
    if (counter > last) holes.push({ from: (last + 1n).toString(), to: counter.toString() });
    return {
      period,
      first: sums.first === null ? null : String(sums.first),
      last: sums.last === null ? null : String(sums.last),
      counter: counter.toString(),
      issued: Number(sums.issued ?? 0),
      voided: Number(sums.voided ?? 0),
      lost: Number(sums.lost ?? 0),
      holes,
      duplicates: twice.map((r) => String(r.number)),
    };
  }

  /** Whether {@link issueKnown} can write a group in one round trip here (not on SQLite). */
  get oneTrip(): boolean {
    return this.transactions.inOneTrip !== undefined;
  }

  /** Closes the transactions' own connections (SQLite's, MySQL's one-trip pool). */
  close(): Promise<void> {
    return this.transactions.close();
  }

  /** The database's clock, Unix ms: it decides a gapless series' period for the whole fleet. */
  async now(): Promise<number> {
    const [row] = await this.db.query<{ now_ms: unknown }>(`SELECT ${this.db.nowMs} AS now_ms`);
    return Number(row.now_ms);
  }

  /** The period's counter (0 before its first take). */
  async counter(entityKey: string, period: string): Promise<bigint> {
    const rows = await this.db.query<{ seq: string }>(
      `SELECT ${this.db.bigText('seq')} AS seq FROM gapless_counter WHERE entity_key = ? AND period = ?`,
      [entityKey, period],
    );
    return rows[0] ? BigInt(rows[0].seq) : 0n;
  }

  /**
   * Enters every sequence of the period that has no ledger row, up to the
   * highest of the high-water record (`recorded`), the counter and the
   * ledger's last row, as lost, and moves the counter there, in one
   * transaction under the counter's lock: after a restore that put both
   * tables back (the range above the counter), one that put back one
   * before the other or stopped between them (a counter above the ledger's
   * rows, or below them: the rows kept, never issued again). Resolves to
   * the first and last sequence entered and how many (none entered:
   * undefined, the counter still moved up to the ledger when behind it).
   */
  async enterLost(entityKey: string, scheme: NumberScheme, period: Period, recorded: bigint | undefined) {
    return this.transactions.transaction(async (tx) => {
      const lock = this.db.dialect === 'sqlite' ? '' : ' FOR UPDATE';
      const { rows } = await tx.run(
        `SELECT ${this.db.bigText('seq')} AS seq, ${this.db.nowMs} AS now_ms FROM gapless_counter WHERE entity_key = ? AND period = ?${lock}`,
        [entityKey, period.id],
      );
      const counter = rows[0] ? BigInt(String(rows[0].seq)) : 0n;
      const lastRow = await this.lastRow(tx, entityKey, period.id);
      const upTo = [recorded ?? 0n, counter, lastRow].reduce((a, b) => (a > b ? a : b));
      const missing = await this.holes(tx, entityKey, period.id);
      if (lastRow < upTo) missing.push({ from: lastRow + 1n, to: upTo });
      if (missing.length === 0 && counter === upTo) return undefined;
      if (!rows[0]) await tx.run(this.insertCounter, [entityKey, period.id, this.clock.now()]);
      const now = rows[0] ? Number(rows[0].now_ms) : this.clock.now();
      const format = scheme.template.formatter(period);
      const lost: unknown[][] = [];
      for (const { from, to } of missing)
        for (let seq = from; seq <= to; seq++)
          lost.push([entityKey, period.id, seq.toString(), format(seq), now, null, null, null, 'lost', LOST_REASON]);
      await this.insertRows(tx, lost);
      await tx.run('UPDATE gapless_counter SET seq = ?, update_time = ? WHERE entity_key = ? AND period = ?', [
        upTo.toString(),
        this.clock.now(),
        entityKey,
        period.id,
      ]);
      if (missing.length === 0) return undefined;
      return { from: missing[0].from, to: missing[missing.length - 1].to, count: lost.length };
    });
  }

  /**
   * The period's missing sequences below its last row, as ranges: a row
   * whose sequence less one has no row ends one, the row before it is the
   * highest below it. Read through `tx` (locking on MySQL/MariaDB, as
   * {@link lastRow}) inside a transaction, on the pool for the audit.
   */
  private async holes(tx: Tx | undefined, entityKey: string, period: string) {
    const lock = tx && this.db.dialect === 'mysql' ? ' LOCK IN SHARE MODE' : '';
    const sql = `SELECT ${this.db.bigText('l.seq')} AS after_hole, ${this.db.bigText(`(SELECT MAX(p.seq) FROM gapless_number p WHERE p.entity_key = l.entity_key AND p.period = l.period AND p.seq < l.seq)`)} AS before_hole
       FROM gapless_number l WHERE l.entity_key = ? AND l.period = ? AND l.seq > 1
       AND NOT EXISTS (SELECT 1 FROM gapless_number p WHERE p.entity_key = l.entity_key AND p.period = l.period AND p.seq = l.seq - 1)
       ORDER BY l.seq${lock}`;
    const params = [entityKey, period];
    const rows = tx ? (await tx.run(sql, params)).rows : await this.db.query<SqlRow>(sql, params);
    return rows.map((g) => ({
      from: (g.before_hole === null ? 0n : BigInt(String(g.before_hole))) + 1n,
      to: BigInt(String(g.after_hole)) - 1n,
    }));
  }
}

/** Where a one-trip group moves the counter: by `n` from `before`, if the database's clock is in `period`. */
interface Move {
  readonly entityKey: string;
  readonly period: Period;
  readonly n: number;
  readonly before: bigint;
  /** The counter's `update_time`. */
  readonly at: number;
}

/**
 * The one-trip UPDATE's values after its SET: the counter's row, the value
 * it must be at, the period's bounds, and the ledger's rows whose last must
 * be at that value too ({@link lastRowAt}).
 */
const movedFrom = (m: Move) => {
  const before = m.before.toString();
  return [m.entityKey, m.period.id, before, m.period.start, m.period.end, m.entityKey, m.period.id, before];
};

/** The one-trip UPDATE's last condition: the ledger's last row of the period is where the counter is (its tables did not go back apart). */
const lastRowAt = (cast: 'SIGNED' | 'BIGINT') =>
  `(SELECT COALESCE(MAX(n.seq), 0) FROM gapless_number n WHERE n.entity_key = ? AND n.period = ?) = CAST(? AS ${cast})`;

interface OneTripRow {
  readonly seq: string;
  readonly number: string;
  readonly key: string | null;
  readonly count: number | null;
  readonly reference: string | null;
}

/**
 * MySQL/MariaDB: the counter's UPDATE, then the rows INSERTed only where
 * it moved the counter (`ROW_COUNT()`, kept in a variable): none when it
 * did not match.
 */
function mysqlOneTrip(nowMs: string, move: Move, rows: readonly OneTripRow[]): Statement[] {
  const values = rows.map((_, i) =>
    i === 0 ? 'SELECT ? AS seq, ? AS number, ? AS k, ? AS n, ? AS r' : 'SELECT ?, ?, ?, ?, ?',
  );
  return [
    { sql: `SET @gapless_now = ${nowMs}`, params: [] },
    {
      sql: `UPDATE gapless_counter SET seq = seq + ?, update_time = ? WHERE entity_key = ? AND period = ? AND seq = CAST(? AS SIGNED) AND @gapless_now >= ? AND @gapless_now < ? AND ${lastRowAt('SIGNED')}`,
      params: [move.n, move.at, ...movedFrom(move)],
    },
    { sql: 'SET @gapless_moved = ROW_COUNT()', params: [] },
    {
      sql: `INSERT INTO gapless_number (entity_key, period, seq, number, issued_at, idempotency_key, take_count, reference, status, reason)
        SELECT ?, ?, v.seq, v.number, @gapless_now, v.k, v.n, v.r, 'issued', NULL
        FROM (${values.join(' UNION ALL ')}) v WHERE @gapless_moved = 1`,
      params: [move.entityKey, move.period.id, ...rows.flatMap((r) => [r.seq, r.number, r.key, r.count, r.reference])],
    },
  ];
}

/** PostgreSQL: one statement, the counter's UPDATE a CTE the INSERT reads its rows from (none when it matched nothing). */
function postgresOneTrip(db: Database, move: Move, rows: readonly OneTripRow[]): Statement {
  return {
    sql: `WITH t AS (SELECT ${db.nowMs} AS now_ms),
      c AS (UPDATE gapless_counter SET seq = seq + CAST(? AS BIGINT), update_time = ? FROM t
        WHERE entity_key = ? AND period = ? AND seq = CAST(? AS BIGINT) AND t.now_ms >= ? AND t.now_ms < ? AND ${lastRowAt('BIGINT')} RETURNING t.now_ms)
      INSERT INTO gapless_number (entity_key, period, seq, number, issued_at, idempotency_key, take_count, reference, status)
      SELECT ?, ?, v.seq, v.number, c.now_ms, v.k, v.n, v.r, 'issued' FROM c,
        unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS INT[]), CAST(? AS TEXT[])) AS v(seq, number, k, n, r)
      RETURNING 1`,
    params: [
      String(move.n),
      move.at,
      ...movedFrom(move),
      move.entityKey,
      move.period.id,
      rows.map((r) => r.seq),
      rows.map((r) => r.number),
      rows.map((r) => r.key),
      rows.map((r) => r.count),
      rows.map((r) => r.reference),
    ],
  };
}

type KnownTake = Omit<LedgerSpan, 'replayed'> & { reference: string | undefined };

/** A take whose key the ledger holds: its numbers again, or a 409 when its body differs (as the idempotency store answers). */
function replay(take: LedgerTake, known: ReadonlyMap<string, KnownTake>): GroupAnswer | undefined {
  const found = take.idempotencyKey === undefined ? undefined : known.get(take.idempotencyKey);
  if (!found) return undefined;
  if (found.count !== take.count)
    return new ConflictError(
      `this Idempotency-Key was used for a request of ${found.count} ids; a retry must ask for the same count (or use a new key)`,
    );
  if (found.reference !== take.reference)
    return new ConflictError(
      'this Idempotency-Key was used with another reference; a retry must send the same reference (or use a new key)',
    );
  return { period: found.period, first: found.first, count: found.count, replayed: true };
}

/** The key, count and reference columns of a take's `k`-th row: the key and count on its first row only. */
function firstOfTake(take: LedgerTake, k: number): unknown[] {
  return k === 0
    ? [take.idempotencyKey ?? null, take.count, take.reference ?? null]
    : [null, null, take.reference ?? null];
}
