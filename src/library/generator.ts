import { systemClock } from '../clock';
import { type Database, openDatabase } from '../db/database';
import { SqlEntityStore } from '../entities/entity-store';
import { UnavailableError, errorMessage } from '../errors';
import { silentLogger } from '../logger';
import { SqlSegmentAllocator } from '../segment/allocator';
import { type DatabaseBehindReport, HighWaterAllocator, ProcessHighWater } from '../segment/high-water';
import { SqlNumberCounter } from '../segment/number-counter';
import { HighWaterNumberCounter } from '../segment/number-high-water';
import { checkStride } from '../segment/stride-record';
import { BigIntDoubleBuffer, NumberDoubleBuffer } from '../double-buffer/double-buffer';
import { BufferedIdGenerator, type Deps, type IdGenerator } from './loader';
import { LocalNumbers } from './numbers';
import { LeasedIdGenerator } from './leased';
import {
  DEFAULT_OPTIONS,
  type GeneratorSeams,
  type IdGeneratorOptions,
  idTypeFrom,
  settingsFrom,
  strideFrom,
} from './options';

/** Without migrations, a database the service never ran on has no `application` table: say so plainly. */
async function requireSchema(db: Database): Promise<void> {
  try {
    await db.query('SELECT 1 FROM application LIMIT 1');
  } catch (err) {
    await db.close();
    throw new UnavailableError(
      `${db.description} has no application table (${errorMessage(err)}): start the idpool service on it once, run "npm run migration:run", or pass migrate: true`,
    );
  }
}

/** An id generator over the service's database, or leasing from it (`service`); bad options throw {@link InvalidOptionError}. */
export async function createIdGenerator(options: IdGeneratorOptions & { ids: 'number' }): Promise<IdGenerator<number>>;
export async function createIdGenerator(options?: IdGeneratorOptions & { ids?: 'bigint' }): Promise<IdGenerator>;
export async function createIdGenerator(options: IdGeneratorOptions = {}): Promise<IdGenerator<number> | IdGenerator> {
  // A JavaScript caller's stray seams are not taken: the public options have none.
  return buildGenerator({ ...options, allocator: undefined, entities: undefined, numberCounter: undefined });
}

/** {@link createIdGenerator} with the seams tests hand in (in this package only: `src/index.ts` does not export it). */
export async function createIdGeneratorWith(
  options: IdGeneratorOptions & GeneratorSeams & { ids: 'number' },
): Promise<IdGenerator<number>>;
export async function createIdGeneratorWith(
  options?: IdGeneratorOptions & GeneratorSeams & { ids?: 'bigint' },
): Promise<IdGenerator>;
export async function createIdGeneratorWith(
  options: IdGeneratorOptions & GeneratorSeams = {},
): Promise<IdGenerator<number> | IdGenerator> {
  return buildGenerator(options);
}

async function buildGenerator(
  options: IdGeneratorOptions & GeneratorSeams,
): Promise<IdGenerator<number> | IdGenerator> {
  const settings = settingsFrom(options);
  const ids = idTypeFrom(options);
  if (options.service) {
    return ids === 'number'
      ? new LeasedIdGenerator<number>(options.service, ids, settings)
      : new LeasedIdGenerator<bigint>(options.service, ids, settings);
  }
  const idStride = strideFrom(options);
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  let db: Database | undefined = options.database;
  let release = async (): Promise<void> => undefined;
  if (!db && !(options.allocator && options.entities)) {
    db = await openDatabase(options.databaseUrl ?? DEFAULT_OPTIONS.databaseUrl, {
      migrate: options.migrate ?? false,
      clock,
      urlSource: options.databaseUrl === undefined ? 'the default databaseUrl' : 'databaseUrl',
    });
    const opened = db;
    release = () => opened.close();
    if (!(options.migrate ?? false)) await requireSchema(opened);
  }
  if (db) {
    try {
      await checkStride(db, idStride.count, idStride.index, clock);
    } catch (err) {
      await release();
      throw err;
    }
  }
  const sql = (): Database => {
    if (!db) throw new TypeError('createIdGenerator: no database to build the allocator or entity store on');
    return db;
  };
  const onBehind = (report: DatabaseBehindReport) => {
    log.error(
      {
        alarm: 'database_behind',
        entityKey: report.entityKey,
        ...(report.period !== undefined && { period: report.period }),
        databaseOffset: report.databaseOffset.toString(),
        recordedOffset: report.recordedOffset.toString(),
        carriedTo: report.carriedTo.toString(),
      },
      "the database went back below this process's last reservation; carried past it",
    );
    options.onDatabaseBehind?.(report);
  };
  // This process's own reservations are the record a database that went back is seen against.
  const record = new ProcessHighWater();
  const allocator = new HighWaterAllocator(options.allocator ?? new SqlSegmentAllocator(sql()), record, onBehind);
  const counter = options.numberCounter ?? (db && new SqlNumberCounter(db, clock));
  const numbers =
    counter && new LocalNumbers({ counter: new HighWaterNumberCounter(counter, record, onBehind), clock, log });
  // Rows of old periods go after the retention (docs/numbers.md), as the service prunes them.
  numbers?.start();
  const entities = options.entities ?? new SqlEntityStore(sql());
  const deps: Deps = { allocator, entities, idStride, clock, log, settings, release, numbers };
  return ids === 'number'
    ? new BufferedIdGenerator(deps, NumberDoubleBuffer)
    : new BufferedIdGenerator(deps, BigIntDoubleBuffer);
}
