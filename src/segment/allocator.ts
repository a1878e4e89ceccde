import { type Clock, systemClock } from '../clock';
import { type Database, whileBusy } from '../db/database';
import { classifySqlError } from '../db/errors';
import { NotFoundError, UnavailableError } from '../errors';
import { MAX_INT63 } from '../limits';

/** A reserved stretch `[start, end)` of an entity's number line. */
export interface Segment {
  readonly start: bigint;
  readonly end: bigint;
}

/** The only code that advances `current_offset`; a segment is returned once committed: a crash wastes ids, never repeats them. */
export interface SegmentAllocator {
  /** Reserves the next `size` numbers of `entityKey` (a live entity). */
  reserve(entityKey: string, size: number): Promise<Segment>;
  /** The next unreserved number (`current_offset`): every number below it may have been issued. */
  peek(entityKey: string): Promise<bigint>;
  /** `current_offset` of the given entities in one query (a page of the admin list, a batch of the ops sampler); unknown keys are left out. */
  peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>>;
}

/** The service's own allocators can also move a line up (an import catching up with the old service); the library's need not. */
export interface LineRaiser {
  /** Moves a live segment entity's start, and its next unreserved number (never down), up to `atLeast`; resolves to the latter. */
  raise(entityKey: string, atLeast: bigint): Promise<bigint>;
}

const lineUsedUp = (entityKey: string) =>
  new UnavailableError(`entity ${entityKey} has used up its 63-bit number line`, 3600);

/**
 * Reserves with one SQL round trip: on MySQL/MariaDB the new offset comes back through `LAST_INSERT_ID(expr)`
 * in the UPDATE's own OK packet (no second query); on PostgreSQL and SQLite through `UPDATE … RETURNING`.
 */
export class SqlSegmentAllocator implements SegmentAllocator, LineRaiser {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock = systemClock,
  ) {}

  async reserve(entityKey: string, size: number): Promise<Segment> {
    if (!Number.isSafeInteger(size) || size <= 0)
      throw new RangeError(`segment size must be a positive integer, got ${size}`);
    const reserving =
      this.db.dialect === 'mysql' ? this.reserveMysql(entityKey, size) : this.reserveReturning(entityKey, size);
    const end = await reserving.catch((err: unknown) => {
      throw classifySqlError(err)?.kind === 'out_of_range' ? lineUsedUp(entityKey) : err;
    });
    return { start: end - BigInt(size), end };
  }

  private async reserveMysql(entityKey: string, size: number): Promise<bigint> {
    const result = await this.db.execute(
      'UPDATE application SET current_offset = LAST_INSERT_ID(current_offset + ?) WHERE entity_key = ? AND deleted_at = 0 AND id_mode = ? AND live = 0',
      [size, entityKey, 'segment'],
    );
    if (result.affectedRows !== 1 || result.insertId === undefined)
      throw new NotFoundError(`no live segment entity ${entityKey}`);
    return BigInt(result.insertId);
  }

  /**
   * PostgreSQL and SQLite (only SQLite answers "busy"). The size is cast to BIGINT and the line's end checked
   * in the WHERE: better-sqlite3 binds a number as a REAL, and SQLite's INTEGER + REAL is floating point, so an
   * offset above 2^53 came back (and was stored) rounded, an id handed out twice, and one past 2^63 as `9.2e+18`.
   */
  private async reserveReturning(entityKey: string, size: number): Promise<bigint> {
    const sql = `UPDATE application SET current_offset = current_offset + CAST(? AS BIGINT) WHERE entity_key = ? AND deleted_at = 0 AND id_mode = ? AND live = 0 AND current_offset <= CAST(? AS BIGINT) RETURNING ${this.db.bigText('current_offset')} AS end_offset`;
    const params = [size, entityKey, 'segment', (MAX_INT63 - BigInt(size)).toString()];
    const rows = await whileBusy(() => this.db.query<{ end_offset: string }>(sql, params), this.clock);
    if (rows.length !== 1) {
      const live = await this.db.query(
        'SELECT 1 AS live FROM application WHERE entity_key = ? AND deleted_at = 0 AND id_mode = ?',
        [entityKey, 'segment'],
      );
      if (live.length === 1) throw lineUsedUp(entityKey);
      throw new NotFoundError(`no live segment entity ${entityKey}`);
    }
    return BigInt(rows[0].end_offset);
  }

  async raise(entityKey: string, atLeast: bigint): Promise<bigint> {
    // One statement, ordered with reservations by the row lock. The start moves too (a re-run of the import
    // sees the line up) and update_time, so every instance's registry refresh picks the new start up.
    const n = atLeast.toString();
    await this.db.execute(
      `UPDATE application SET current_offset = CASE WHEN current_offset < ? THEN ? ELSE current_offset END, start_offset = ?, update_time = ?
       WHERE entity_key = ? AND deleted_at = 0 AND id_mode = ? AND start_offset < ?`,
      [n, n, n, this.clock.now(), entityKey, 'segment', n],
    );
    return this.peek(entityKey);
  }

  /**
   * Records a segment a live entity reserved from its incumbent's row: `current_offset` up to its end (for the
   * fence check, the views and `--finish`), counted in `live_reserved`. False when the entity is no longer
   * live: this table's reservations may then cover the segment, which must not be used.
   */
  async recordLive(entityKey: string, segment: Segment): Promise<boolean> {
    const end = segment.end.toString();
    const result = await this.db.execute(
      `UPDATE application SET current_offset = CASE WHEN current_offset < ? THEN ? ELSE current_offset END, live_reserved = live_reserved + ?
       WHERE entity_key = ? AND deleted_at = 0 AND live = 1`,
      [end, end, (segment.end - segment.start).toString(), entityKey],
    );
    return result.affectedRows === 1;
  }

  /**
   * Ends a live cutover in one statement: the line moves up to `atLeast` (never down), above every id the
   * incumbent issued, and {@link recordLive} refuses a later segment from its row. False when not live.
   */
  async finishLive(entityKey: string, atLeast: bigint): Promise<boolean> {
    const n = atLeast.toString();
    const result = await this.db.execute(
      `UPDATE application SET live = 0, current_offset = CASE WHEN current_offset < ? THEN ? ELSE current_offset END,
       start_offset = CASE WHEN start_offset < ? THEN ? ELSE start_offset END, update_time = ?
       WHERE entity_key = ? AND deleted_at = 0 AND live = 1`,
      [n, n, n, n, this.clock.now(), entityKey],
    );
    return result.affectedRows === 1;
  }

  /** Every live entity's next unreserved number and the numbers it reserved from its incumbent's row, read now. */
  async liveLines(): Promise<{ key: string; current: bigint; reserved: bigint }[]> {
    const rows = await this.db.query<{ k: string; c: string; r: string }>(
      `SELECT entity_key AS k, ${this.db.bigText('current_offset')} AS c, ${this.db.bigText('live_reserved')} AS r FROM application WHERE deleted_at = 0 AND live = 1 ORDER BY entity_key`,
      [],
    );
    return rows.map((r) => ({ key: r.k, current: BigInt(r.c), reserved: BigInt(r.r) }));
  }

  async peek(entityKey: string): Promise<bigint> {
    const rows = await this.db.query<{ current: string }>(
      `SELECT ${this.db.bigText('current_offset')} AS current FROM application WHERE entity_key = ?`,
      [entityKey],
    );
    if (rows.length !== 1) throw new NotFoundError(`no entity ${entityKey}`);
    return BigInt(rows[0].current);
  }

  /** `current_offset` of every live segment entity in one query (the fence check's: no list of keys to send). */
  peekAll(): Promise<Map<string, bigint>> {
    return this.offsetsWhere('deleted_at = 0 AND id_mode = ?', ['segment']);
  }

  /**
   * A digest of every live segment entity's `current_offset` in one row: the count, the sum (high and low parts,
   * so no integer overflows) and a sum weighted by row id. Any reservation, carry, registration, retirement or
   * restore moves it, unless other entities' reservations make up a restore's losses exactly in both sums.
   * The fence check reads every offset only when it moved.
   */
  async offsetsMark(): Promise<string> {
    const text = (expr: string) => this.db.bigText(`COALESCE(${expr}, 0)`);
    const rows = await this.db.query<{ n: string; h: string; l: string; w: string }>(
      `SELECT ${text('COUNT(*)')} AS n, ${text('SUM(current_offset / 1000003)')} AS h, ${text('SUM(current_offset % 1000003)')} AS l, ${text('SUM((current_offset % 1000003) * (id % 1009))')} AS w FROM application WHERE deleted_at = 0 AND id_mode = ?`,
      ['segment'],
    );
    const { n, h, l, w } = rows[0];
    return `${n}:${h}:${l}:${w}`;
  }

  async peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> {
    if (entityKeys.length === 0) return new Map();
    return this.offsetsWhere(`entity_key IN (${entityKeys.map(() => '?').join(', ')})`, [...entityKeys]);
  }

  private async offsetsWhere(where: string, params: unknown[]): Promise<Map<string, bigint>> {
    const rows = await this.db.query<{ k: string; c: string }>(
      `SELECT entity_key AS k, ${this.db.bigText('current_offset')} AS c FROM application WHERE ${where}`,
      params,
    );
    return new Map(rows.map((r) => [r.k, BigInt(r.c)]));
  }
}
