/**
 * Gapless series (docs/numbers.md "Gapless series"): business numbers
 * issued at the take, each in the ledger, none skipped. The takes of one
 * entity that arrive while its transaction runs wait and go in the next
 * one together (each with its own ledger rows, key and reference), so the
 * period's counter row is locked once per group, not once per request.
 */
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { GAPLESS_MAX_COUNT } from '../entities/validation';
import { ConflictError, IdpoolError, InvalidRequestError } from '../errors';
import { classifySqlError } from '../db/errors';
import type { Logger } from '../logger';
import type { Period } from '../numbers/period';
import { NumberScheme } from '../numbers/scheme';
import type { HighWaterFile } from '../segment/high-water';
import { FileGaplessHighWater, type GaplessHighWater, NO_HIGH_WATER } from './high-water';
import {
  type GroupAnswer,
  GroupDeclined,
  ONE_TRIP_ROWS,
  type LedgerAudit,
  type LedgerEntry,
  type LedgerSpan,
  type LedgerTake,
  type SqlLedger,
} from './ledger';

/** What a gapless take answers: its numbers, and whether the ledger already held them under its key. */
export interface GaplessNumbers {
  readonly numbers: string[];
  readonly replayed: boolean;
}

/**
 * Most takes one transaction writes: 100 takes of the largest batch (100)
 * is 10,000 ledger rows, a few hundred milliseconds of INSERT at most;
 * beyond it the next group waits for the next transaction.
 */
const MAX_GROUP_TAKES = 100;
/** A take racing another with the same key loses its INSERT (or a deadlock); it is read again this often at most. */
const RACE_ROUNDS = 5;

/** Printable, no control characters: a reference is printed in the audit's CSV and on the dashboard. */
// eslint-disable-next-line no-control-regex -- refusing control characters is what this pattern is for.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Transactions of one entity an instance runs at once: the second reads
 * the clock and the keys, and waits at the counter's row lock, while the
 * first commits, so the part before the lock is off the series' critical
 * path (measured here: BEGIN and the first SELECT were most of a take's
 * time on a busy machine, the commit 1-2 ms).
 */
const IN_FLIGHT = 2;

interface EntityQueue {
  waiting: Pending[];
  inFlight: number;
  scheduled: boolean;
}

/** The next group of the queue: up to {@link MAX_GROUP_TAKES}, a key at most once (the second waits, then replays). */
function nextGroup(queue: EntityQueue): Pending[] {
  const group: Pending[] = [];
  const keys = new Set<string>();
  const later: Pending[] = [];
  for (const pending of queue.waiting.splice(0)) {
    const key = pending.take.idempotencyKey;
    if (group.length >= MAX_GROUP_TAKES || (key !== undefined && keys.has(key))) later.push(pending);
    else {
      group.push(pending);
      if (key !== undefined) keys.add(key);
    }
  }
  queue.waiting.push(...later);
  return group;
}

/** Where this instance last left an entity's counter, and moved it to in its groups since. */
interface KnownCounter {
  readonly period: Period;
  last: bigint;
  /** The last group's one trip: whether it wrote. */
  trip?: Promise<boolean>;
}

interface Pending {
  readonly take: LedgerTake;
  resolve(span: LedgerSpan): void;
  reject(err: unknown): void;
}

export class GaplessSeries {
  private readonly queues = new Map<string, EntityQueue>();
  private readonly schemes = new Map<string, NumberScheme>();
  private readonly counters = new Map<string, KnownCounter>();
  /** An entity's group on the locking path now, where the one-trip path is: the next group waits for it. */
  private readonly locking = new Map<string, Promise<GroupAnswer[]>>();

  constructor(
    private readonly deps: {
      ledger: Pick<SqlLedger, 'issue' | 'issueKnown' | 'oneTrip' | 'void' | 'entries' | 'audit' | 'now' | 'enterLost'>;
      highWater: GaplessHighWater;
      log: Logger;
      /** The clock of a refused period name's example (the period itself is the database's clock's). */
      clock: Pick<Clock, 'now'>;
    },
  ) {}

  /** `count` consecutive numbers of the period the database's clock is in, each in the ledger before it is answered. */
  async take(
    entity: EntityConfig,
    count: number,
    request: { idempotencyKey?: string; reference?: string } = {},
  ): Promise<GaplessNumbers> {
    const scheme = this.schemeOf(entity);
    if (!Number.isSafeInteger(count) || count < 1 || count > GAPLESS_MAX_COUNT)
      throw new InvalidRequestError(`count must be an integer from 1 to ${GAPLESS_MAX_COUNT} (a gapless series)`);
    const take = { count, idempotencyKey: request.idempotencyKey, reference: checkedReference(request.reference) };
    const span = await new Promise<LedgerSpan>((resolve, reject) => this.enqueue(entity, { take, resolve, reject }));
    const period = scheme.calendar.named(span.period);
    if (!period) throw new Error(`period ${span.period} of ${entity.key} is no period of its calendar`);
    const format = scheme.template.formatter(period);
    const numbers = Array.from({ length: span.count }, (_, k) => format(span.first + BigInt(k)));
    return { numbers, replayed: span.replayed };
  }

  private enqueue(entity: EntityConfig, pending: Pending): void {
    let queue = this.queues.get(entity.key);
    if (!queue) this.queues.set(entity.key, (queue = { waiting: [], inFlight: 0, scheduled: false }));
    queue.waiting.push(pending);
    if (queue.scheduled || queue.inFlight >= IN_FLIGHT) return;
    queue.scheduled = true;
    // After this turn's other requests arrived: they share the first transaction.
    setImmediate(() => {
      queue.scheduled = false;
      this.pump(entity, queue);
    });
  }

  /** Starts groups while fewer than {@link IN_FLIGHT} of the entity's transactions run here. */
  private pump(entity: EntityConfig, queue: EntityQueue): void {
    while (queue.waiting.length > 0 && queue.inFlight < IN_FLIGHT) {
      const group = nextGroup(queue);
      queue.inFlight++;
      void this.issueGroup(entity, group).finally(() => {
        queue.inFlight--;
        this.pump(entity, queue);
      });
    }
    if (queue.inFlight === 0 && queue.waiting.length === 0) this.queues.delete(entity.key);
  }

  /** One transaction for the group; when it cannot be one (too few left, a key another instance just wrote), one each. */
  private async issueGroup(entity: EntityConfig, group: Pending[]): Promise<void> {
    try {
      const takes = group.map((p) => p.take);
      const answers = await this.issue(entity, takes);
      answers.forEach((answer, i) =>
        answer instanceof ConflictError ? group[i].reject(answer) : group[i].resolve(answer),
      );
    } catch (err) {
      if (group.length > 1 && (err instanceof GroupDeclined || isLostRace(err))) {
        for (const pending of group) await this.issueGroup(entity, [pending]);
        return;
      }
      for (const pending of group) pending.reject(err);
    }
  }

  /**
   * The group's answers once in the ledger and in the high-water record:
   * in one trip where this instance knows the counter, else the locking
   * path. A group on the locking path moves the counter under any trip, so
   * the next group waits for it and goes on from where it left the counter
   * (going the locking way too would keep one of them on it for good).
   */
  private async issue(entity: EntityConfig, takes: LedgerTake[]): Promise<GroupAnswer[]> {
    const scheme = this.schemeOf(entity);
    if (!this.deps.ledger.oneTrip) return this.issueLocking(entity, scheme, takes);
    for (let ahead = this.locking.get(entity.key); ahead; ahead = this.locking.get(entity.key))
      await ahead.catch(() => undefined);
    const known = await this.issueKnown(entity, scheme, takes);
    if (known) return known;
    const locked = this.issueLocking(entity, scheme, takes);
    this.locking.set(entity.key, locked);
    try {
      return await locked;
    } finally {
      if (this.locking.get(entity.key) === locked) this.locking.delete(entity.key);
    }
  }

  /** The locking path (SqlLedger.issue); a lost race on a key is read again. */
  private async issueLocking(entity: EntityConfig, scheme: NumberScheme, takes: LedgerTake[]) {
    for (let round = 1; ; round++) {
      try {
        const { answers, period, last } = await this.deps.ledger.issue(entity.key, scheme, takes, this.deps.highWater);
        await this.record(entity.key, period, last, answers);
        if (last !== undefined) this.know(entity.key, period, last);
        return answers;
      } catch (err) {
        if (takes.length > 1 || !isLostRace(err) || round >= RACE_ROUNDS) throw err;
      }
    }
  }

  /**
   * The group in one round trip from where this instance last left the
   * counter (the next group goes on from this one's end, its trip sent once
   * this one's answered); undefined when the counter is not there (another
   * instance moved it, a new period, a key already in the ledger, the
   * ledger behind the high-water record): nothing was written, and the
   * locking path answers.
   */
  private async issueKnown(entity: EntityConfig, scheme: NumberScheme, takes: LedgerTake[]) {
    const known = this.counters.get(entity.key);
    const total = takes.reduce((n, t) => n + t.count, 0);
    if (!known || total > ONE_TRIP_ROWS || known.last + BigInt(total) > scheme.capacity) return undefined;
    const before = known.last;
    known.last += BigInt(total);
    const trip = this.trip(entity.key, scheme, known.period, takes, before, known.trip);
    known.trip = trip.then(
      (spans) => spans !== undefined,
      () => false,
    );
    const forget = () => {
      if (this.counters.get(entity.key) === known) this.counters.delete(entity.key);
    };
    // A trip that failed (a timeout: it may still commit) leaves the counter unknown, as one that missed.
    const spans = await trip.catch((err: unknown) => {
      forget();
      throw err;
    });
    if (!spans) {
      forget();
      return undefined;
    }
    await this.deps.highWater.raise(entity.key, known.period.id, before + BigInt(total));
    return spans;
  }

  /**
   * One trip from `before`, once the trip of the group before it (`ahead`)
   * is answered: sent at once, it could reach the database first on another
   * connection and miss. None when that one missed (this one would too) or
   * the high-water record is above `before`.
   */
  private async trip(
    key: string,
    scheme: NumberScheme,
    period: Period,
    takes: LedgerTake[],
    before: bigint,
    ahead: Promise<boolean> | undefined,
  ): Promise<LedgerSpan[] | undefined> {
    const [recorded, wrote] = await Promise.all([this.deps.highWater.get(key, period.id), ahead]);
    if (wrote === false || (recorded !== undefined && recorded > before)) return undefined;
    return this.deps.ledger.issueKnown(key, scheme, period, takes, before);
  }

  /**
   * Records where the locking path left the counter, for the next group's
   * one trip (the highest of the locking groups that ran together).
   */
  private know(key: string, period: Period, last: bigint): void {
    if (!this.deps.ledger.oneTrip) return;
    const known = this.counters.get(key);
    if (known?.period.id !== period.id || known.last < last) this.counters.set(key, { period, last });
  }

  /** Raises the high-water record to what the group was answered, before anyone sees it. */
  private async record(key: string, period: Period, last: bigint | undefined, answers: GroupAnswer[]) {
    const highest = new Map<string, bigint>();
    if (last !== undefined) highest.set(period.id, last);
    for (const a of answers) {
      if (a instanceof ConflictError || !a.replayed) continue;
      const end = a.first + BigInt(a.count) - 1n;
      if ((highest.get(a.period) ?? 0n) < end) highest.set(a.period, end);
    }
    await Promise.all([...highest].map(([p, seq]) => this.deps.highWater.raise(key, p, seq)));
  }

  /** Marks `number` void with `reason`; voiding it again changes nothing and answers the row as it is. */
  async void(entity: EntityConfig, number: string, reason: string): Promise<LedgerEntry> {
    const scheme = this.schemeOf(entity);
    const decoded = scheme.decode(number);
    if (!decoded)
      throw new InvalidRequestError(
        `"${number}" is not a number of ${entity.key}'s template ${scheme.settings.format}`,
      );
    if (CONTROL.test(reason) || reason.length < 1 || reason.length > 255)
      throw new InvalidRequestError('reason must be 1-255 characters without control characters');
    return this.deps.ledger.void(entity.key, decoded.period, BigInt(decoded.seq), reason);
  }

  /** A page of the period's ledger (now's period by the database's clock when none is named). */
  async page(entity: EntityConfig, periodId: string | undefined, after: bigint, limit: number) {
    const period = await this.periodOf(entity, periodId);
    const entries = await this.deps.ledger.entries(entity.key, period.id, after, limit);
    return { period: period.id, entries, next: entries.length === limit ? entries[entries.length - 1].seq : null };
  }

  async audit(entity: EntityConfig, periodId: string | undefined): Promise<LedgerAudit> {
    const period = await this.periodOf(entity, periodId);
    return this.deps.ledger.audit(entity.key, period.id);
  }

  /**
   * After a restore: enters the sequences the ledger lacks, up to the
   * high-water record (or the counter, or the ledger's last row, if
   * higher), as lost, so issuing goes on above them. Nothing to do
   * (undefined) when the ledger holds everything.
   */
  async reconcile(entity: EntityConfig, periodId: string | undefined) {
    const period = await this.periodOf(entity, periodId);
    const recorded = await this.deps.highWater.get(entity.key, period.id);
    const lost = await this.deps.ledger.enterLost(entity.key, this.schemeOf(entity), period, recorded);
    const range = lost && { from: lost.from.toString(), to: lost.to.toString(), count: lost.count };
    if (range)
      this.deps.log.warn(
        { entity: entity.key, period: period.id, ...range },
        'gapless series reconciled: numbers the restored ledger lost entered as lost',
      );
    return { period: period.id, record: this.deps.highWater.kind, lost: range };
  }

  private async periodOf(entity: EntityConfig, periodId: string | undefined): Promise<Period> {
    const calendar = this.schemeOf(entity).calendar;
    if (periodId === undefined) return calendar.at(await this.deps.ledger.now());
    const period = calendar.named(periodId);
    if (!period)
      throw new InvalidRequestError(
        `period "${periodId}" is no ${calendar.reset} period of ${entity.key} (e.g. ${calendar.at(this.deps.clock.now()).id})`,
      );
    return period;
  }

  private schemeOf(entity: EntityConfig): NumberScheme {
    const settings = entity.numbers;
    if (!settings || !entity.gapless) throw new ConflictError(`entity "${entity.key}" is not a gapless series`);
    const id = `${entity.key} ${settings.format} ${settings.reset} ${settings.timeZone}`;
    let scheme = this.schemes.get(id);
    if (!scheme) this.schemes.set(id, (scheme = NumberScheme.of(settings)));
    return scheme;
  }
}

/**
 * Another take with the same key committed first (a duplicate), or two
 * takes of one key met at its index row (a deadlock, rolled back): in
 * both the ledger is as it was, and the take is read again.
 */
function isLostRace(err: unknown): boolean {
  if (err instanceof IdpoolError) return false;
  const failure = classifySqlError(err);
  return failure?.class === 'conflict' || failure?.kind === 'deadlock';
}

function checkedReference(reference: string | undefined): string | undefined {
  if (reference === undefined) return undefined;
  if (reference.length < 1 || reference.length > 128 || CONTROL.test(reference))
    throw new InvalidRequestError('reference must be 1-128 characters without control characters');
  return reference;
}

/**
 * A series issued at the take from the ledger in SQL, checked against the
 * high-water record in Redis (`gaplessRecord`) or, embedded, the high-water
 * file (none on a server database without Redis); closing closes the ledger.
 */
export function buildGapless(deps: {
  stores: { gaplessLedger: SqlLedger; gaplessRecord: GaplessHighWater | undefined };
  highWater: HighWaterFile | undefined;
  log: Logger;
  clock: Pick<Clock, 'now'>;
}) {
  const { gaplessLedger: ledger, gaplessRecord } = deps.stores;
  const series = new GaplessSeries({
    ledger,
    highWater: gaplessRecord ?? (deps.highWater ? new FileGaplessHighWater(deps.highWater) : NO_HIGH_WATER),
    log: deps.log.child({ component: 'gapless' }),
    clock: deps.clock,
  });
  return { value: series, close: () => ledger.close() };
}
