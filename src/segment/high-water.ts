import { open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { sqliteFile } from '../db/database-url';
import { UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import type { LineRaiser, Segment, SegmentAllocator } from './allocator';

/**
 * A database that went back (restored, failed over to a lagging replica) hands out offsets again; a second
 * record of how far each entity was reserved, kept outside it, sees a reservation start below the record.
 */
export interface DatabaseBehindReport {
  readonly entityKey: string;
  /** A business-number period's counter (number_period) rather than the entity's `current_offset`. */
  readonly period?: string;
  /** `current_offset` the database had: the start of the reservation that saw it (or the offset read at start-up). */
  readonly databaseOffset: bigint;
  /** Which record saw it: the service's high-water file, the library's own process, the Redis fence. */
  readonly record: 'high-water file' | 'this process' | 'fence';
  /** The offset the record says was reserved up to (every number below it may have been handed out). */
  readonly recordedOffset: bigint;
  /** The Redis fence (the highest id ever pushed), when the fence saw it. */
  readonly fence?: bigint;
  /** `current_offset` after the carry: nothing below it is handed out again. */
  readonly carriedTo: bigint;
}

/** How far each entity was reserved, recorded outside the database. */
export interface HighWaterRecord {
  readonly kind: DatabaseBehindReport['record'];
  /** The end of the last segment of `entityKey` recorded, if any. */
  get(entityKey: string): bigint | undefined;
  /** Records that numbers below `end` were reserved; resolves once the record would survive a crash. */
  raise(entityKey: string, end: bigint): Promise<void>;
  /** Drops the marks `drop` names (old business-number periods' marks, number-high-water.ts). */
  forget?(drop: (key: string) => boolean): Promise<void>;
}

/** The library's record: this process's own last reservation end per entity (other processes' are not seen). */
export class ProcessHighWater implements HighWaterRecord {
  readonly kind: HighWaterRecord['kind'] = 'this process';
  protected readonly ends = new Map<string, bigint>();

  get(entityKey: string): bigint | undefined {
    return this.ends.get(entityKey);
  }

  async raise(entityKey: string, end: bigint): Promise<void> {
    keepHighest(this.ends, entityKey, end);
  }

  async forget(drop: (key: string) => boolean): Promise<void> {
    for (const key of [...this.ends.keys()]) if (drop(key)) this.ends.delete(key);
  }
}

/** What {@link HighWaterFile.load} found. */
export type HighWaterLoad =
  | { readonly status: 'ok'; readonly entities: number }
  | { readonly status: 'missing' }
  | { readonly status: 'unreadable'; readonly reason: string };

interface FileContent {
  /** The database this file is the second record of (its description, to tell a moved file). */
  database: string;
  /** entity key → end of its last reserved segment (decimal). */
  entities: Record<string, string>;
}

/**
 * The embedded service's record: a JSON file beside the SQLite file (`idpool.db.high-water`), written before
 * any id of a new segment leaves. Temp file fsynced, renamed over, folder fsynced: a crash leaves the old file
 * or the new. Writes are serialised here and merge (highest wins) what the file holds, so processes sharing
 * the SQLite file keep each other's marks unless two write in the same instant (docs/ha.md).
 */
export class HighWaterFile extends ProcessHighWater {
  override readonly kind = 'high-water file';
  private version = 0;
  private written = 0;
  private writing: Promise<void> | undefined;
  /** Marks forgotten: not merged back from the file another process wrote. */
  private dropped: (key: string) => boolean = () => false;

  constructor(
    readonly path: string,
    private readonly database: string,
  ) {
    super();
  }

  /** The file beside a SQLite database file. */
  static beside(sqlitePath: string, database: string): HighWaterFile {
    return new HighWaterFile(join(dirname(sqlitePath), `${basename(sqlitePath)}.high-water`), database);
  }

  /** Reads the file; a missing or unreadable one leaves the record empty (the caller says so). */
  async load(): Promise<HighWaterLoad> {
    try {
      const { entities } = parse(await readFile(this.path, 'utf8'));
      for (const [key, end] of Object.entries(entities)) this.merge(key, BigInt(end));
      return { status: 'ok', entities: Object.keys(entities).length };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'missing' };
      return { status: 'unreadable', reason: errorMessage(err) };
    }
  }

  override async raise(entityKey: string, end: bigint): Promise<void> {
    this.merge(entityKey, end);
    await this.flush();
  }

  /** Writes the file once more, covering every change made before; one write at a time. */
  private async flush(): Promise<void> {
    const wanted = ++this.version;
    while (this.written < wanted) {
      this.writing ??= this.writeOnce().finally(() => (this.writing = undefined));
      await this.writing;
    }
  }

  override async forget(drop: (key: string) => boolean): Promise<void> {
    const earlier = this.dropped;
    this.dropped = (key) => earlier(key) || drop(key);
    const before = this.ends.size;
    await super.forget(drop);
    if (this.ends.size < before) await this.flush();
  }

  private merge(entityKey: string, end: bigint): void {
    if (!this.dropped(entityKey)) keepHighest(this.ends, entityKey, end);
  }

  private async writeOnce(): Promise<void> {
    const version = this.version;
    // Another process on the same SQLite file may have written marks of its own (missing or unreadable: said at start-up).
    await this.load();
    const content: FileContent = {
      database: this.database,
      entities: Object.fromEntries([...this.ends].map(([key, end]) => [key, end.toString()])),
    };
    const temp = `${this.path}.${process.pid}.tmp`;
    try {
      await writeFile(temp, JSON.stringify(content, null, 1) + '\n', { mode: 0o600, flush: true });
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
    await rename(temp, this.path);
    const folder = await open(dirname(this.path), 'r');
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
    this.written = version;
  }
}

function keepHighest(ends: Map<string, bigint>, entityKey: string, end: bigint): void {
  const before = ends.get(entityKey);
  if (before === undefined || end > before) ends.set(entityKey, end);
}

function parse(text: string): FileContent {
  // Read as unknown: the file may hold anything.
  const content = JSON.parse(text) as { entities?: unknown } | null;
  const entities = content?.entities;
  if (typeof entities !== 'object' || entities === null) throw new Error('no "entities" object');
  for (const [key, end] of Object.entries(entities as Record<string, unknown>))
    if (typeof end !== 'string' || !/^\d+$/.test(end))
      throw new Error(`entity ${key}: ${JSON.stringify(end)} is not an offset`);
  return content as FileContent;
}

/**
 * A {@link SegmentAllocator} that records every reservation in a {@link HighWaterRecord} before handing it
 * out. One starting below the record is reported and carried past it in one reservation (the gap and the
 * segment asked for, whose segment part is returned): nothing below the record is handed out.
 */
export class HighWaterAllocator implements SegmentAllocator, LineRaiser {
  constructor(
    private readonly inner: SegmentAllocator,
    private readonly record: HighWaterRecord,
    private readonly onBehind: (report: DatabaseBehindReport) => void,
  ) {}

  /** Moves a line up (an import catching up, `Refiller.raise`); the inner allocator must be one that can. */
  async raise(entityKey: string, atLeast: bigint): Promise<bigint> {
    const inner = this.inner as Partial<LineRaiser>;
    if (!inner.raise) throw new UnavailableError('this allocator cannot move a line up', 60);
    return inner.raise.call(this.inner, entityKey, atLeast);
  }

  async reserve(entityKey: string, size: number): Promise<Segment> {
    let segment = await this.inner.reserve(entityKey, size);
    const recorded = this.record.get(entityKey);
    if (recorded !== undefined && segment.start < recorded) {
      const carried = await this.carry(entityKey, segment.end, recorded, size);
      this.reportBehind(entityKey, segment.start, recorded, carried.end);
      segment = carried;
    }
    await this.record.raise(entityKey, segment.end);
    return segment;
  }

  /** At start-up, carries every entity whose `current_offset` is below the record up to it (so `idpool apps show` shows it); returns what was carried. */
  async checkAll(entityKeys: readonly string[]): Promise<DatabaseBehindReport[]> {
    const reports: DatabaseBehindReport[] = [];
    for (const [entityKey, offset] of await this.inner.peekMany(entityKeys)) {
      const recorded = this.record.get(entityKey);
      if (recorded === undefined || offset >= recorded) continue;
      const carried = await this.carry(entityKey, offset, recorded, 0);
      reports.push(this.reportBehind(entityKey, offset, recorded, carried.end));
    }
    return reports;
  }

  private reportBehind(entityKey: string, databaseOffset: bigint, recordedOffset: bigint, carriedTo: bigint) {
    const report = { entityKey, databaseOffset, record: this.record.kind, recordedOffset, carriedTo };
    this.onBehind(report);
    return report;
  }

  peek(entityKey: string): Promise<bigint> {
    return this.inner.peek(entityKey);
  }

  peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> {
    return this.inner.peekMany(entityKeys);
  }

  /** One reservation of the gap up to `recorded` plus `size`: whatever others reserved meanwhile, its last `size` numbers start at or above `recorded`. */
  private async carry(entityKey: string, from: bigint, recorded: bigint, size: number): Promise<Segment> {
    const gap = recorded - from;
    if (gap > BigInt(Number.MAX_SAFE_INTEGER - size))
      throw new UnavailableError(
        `entity ${entityKey}: the database is ${gap} numbers behind its ${this.record.kind}; carry it forward by hand (docs/ha.md)`,
        60,
      );
    const reserved = await this.inner.reserve(entityKey, Number(gap > 0n ? gap : 0n) + size);
    return { start: reserved.end - BigInt(size), end: reserved.end };
  }
}

/** The embedded service's high-water file (docs/ha.md), loaded now: only on a SQLite file without Redis, whose fence is that record. */
export async function buildHighWater(
  config: { databaseUrl: string; redis?: unknown },
  db: { description: string },
  log: Logger,
): Promise<HighWaterFile | undefined> {
  const file = sqliteFile(config.databaseUrl);
  if (config.redis || !file) return undefined;
  const highWater = HighWaterFile.beside(resolve(file), db.description);
  const loaded = await highWater.load();
  if (loaded.status === 'missing')
    log.warn(
      { highWaterFile: highWater.path },
      'no high-water file beside the SQLite file (a first start, or it was removed): a database file restored before this start cannot be seen; the file is written from the first reservation on',
    );
  else if (loaded.status === 'unreadable')
    log.warn(
      { highWaterFile: highWater.path, reason: loaded.reason },
      'the high-water file is unreadable: a database file restored before this start cannot be seen; the file is written again from the first reservation on',
    );
  return highWater;
}
