import { type Clock, within } from '../clock';
import { errorMessage } from '../errors';
import type { Logger } from '../logger';
import { RepeatLimiter, withRepeated } from '../repeat-limiter';
import { type Periodic, every } from '../schedule';
import {
  type FleetAlarm,
  type FleetInstances,
  type FleetStore,
  GONE_KEPT_TTLS,
  type Heartbeat,
  fleetRates,
  fleetView,
  publishedRates,
} from './instances';

/** What this instance says about itself, read at each heartbeat (the fields of its {@link Heartbeat}). */
export interface FleetSelf extends Pick<Heartbeat, 'id' | 'version' | 'node' | 'dialect'> {
  readonly startedAt: number;
  readonly library: string | null;
  clockSkewMs(): Record<string, number | null>;
  /** Known once listening. */
  address(): string;
  workerId(): number | null;
  epoch(): Promise<string>;
  lastSampleAt(): number | undefined;
  activeAlarms(): number;
  /** Ids per second served recently here, per entity. */
  rates(): ReadonlyMap<string, number>;
}

export interface FleetOptions {
  store: FleetStore;
  clock: Clock;
  log: Logger;
  self: FleetSelf;
  /** An instance not heard from within this many ms is gone (IDPOOL_INSTANCE_TTL_MS). */
  ttlMs: number;
  /** Each heartbeat's view of the fleet (the `idpool_instances` gauges). */
  onView?(view: FleetInstances): void;
}

// Each read's wait for Redis: a page waiting longer for it than for its own data feels broken, and a
// Redis that answers does so in 1-2 ms.
const READ_TIMEOUT_MS = 500;
const NO_ANSWER = Symbol('no answer');
// Alarm records kept while Redis is away: as many as the dashboard shows of an instance's own ring.
const MAX_UNSENT = 100;
// A failing fleet write or read is logged once a minute, not once a heartbeat or an alarm.
const FAILURE_LOG_MS = 60_000;

/** Where fleet alarms come from: Redis, or (it did not answer) this instance's own ring. */
export interface FleetAlarms extends Pick<FleetInstances, 'source' | 'note'> {
  readonly recent: FleetAlarm[];
}

/**
 * This instance in the fleet: its heartbeat, its alarms in the fleet stream, and the fleet's
 * instances, alarms and rates read back. Every read is bounded and falls back to this instance
 * alone, saying so; no write ever fails a caller.
 */
export class Fleet {
  private readonly schedule: Periodic;
  // One key for every fleet failure: they share their cause (Redis).
  private readonly failureLog: RepeatLimiter;
  // Alarm records Redis did not take (an alarm about Redis itself is raised while it is away), sent on a later beat.
  private readonly unsent: Record<string, unknown>[] = [];

  constructor(private readonly options: FleetOptions) {
    this.failureLog = new RepeatLimiter(options.clock, { windowMs: FAILURE_LOG_MS, maxKeys: 1 });
    // Five heartbeats a TTL: one lost to a slow Redis or a GC pause does not make an instance look gone.
    const intervalMs = Math.max(100, Math.min(1000, Math.floor(options.ttlMs / 5)));
    this.schedule = every(intervalMs, () => this.beat(), options.clock);
  }

  start(): void {
    this.schedule.start();
    void this.schedule.runNow();
  }

  /** Stops the heartbeat and takes this instance off the list: a stop is not a loss. */
  async stop(): Promise<void> {
    await this.schedule.stop();
    await this.bounded(this.options.store.drop([this.options.self.id])).catch(() => undefined);
  }

  /** Publishes this instance's heartbeat, then reads the fleet's (drops the long gone, updates the gauges). */
  async beat(): Promise<void> {
    try {
      await this.bounded(this.options.store.publish(await this.heartbeat(), publishedRates(this.options.self.rates())));
      await this.sendUnsent();
      const view = await this.read();
      this.options.onView?.(view);
    } catch (err) {
      this.failed('fleet heartbeat failed', err);
    }
  }

  /** Every instance's heartbeat as the fleet view; this instance alone, with `note`, when Redis does not answer. */
  async instances(): Promise<FleetInstances> {
    try {
      return await this.read();
    } catch (err) {
      const now = this.options.clock.now();
      // Redis just did not answer: its epoch would cost another timeout to learn nothing.
      const own = await this.heartbeat(false);
      return { ...fleetView([own], now, own.id).view, source: 'local', note: noAnswer(err, 'this instance only') };
    }
  }

  /** Records an alarm in the fleet stream; one Redis does not take is kept and sent after a later heartbeat. */
  appendAlarm(record: Record<string, unknown>): void {
    // Behind records already waiting: they go first, in order.
    if (this.unsent.length) {
      this.keep(record);
      return;
    }
    this.bounded(this.options.store.appendAlarm({ instance: this.options.self.id, record })).catch((err: unknown) => {
      this.keep(record);
      this.failed('could not add an alarm to the fleet stream; it is sent once Redis answers', err);
    });
  }

  private keep(record: Record<string, unknown>): void {
    this.unsent.push(record);
    if (this.unsent.length > MAX_UNSENT) this.unsent.splice(0, this.unsent.length - MAX_UNSENT);
  }

  // Sends the kept records, oldest first, until one fails (it stays for the next beat).
  private async sendUnsent(): Promise<void> {
    while (this.unsent.length) {
      await this.bounded(this.options.store.appendAlarm({ instance: this.options.self.id, record: this.unsent[0] }));
      this.unsent.shift();
    }
  }

  /** The fleet's newest `count` alarms, or `local()` (this instance's) with a note when Redis does not answer. */
  async alarms(count: number, local: () => FleetAlarm[]): Promise<FleetAlarms> {
    try {
      return { source: 'redis', recent: await this.bounded(this.options.store.recentAlarms(count)) };
    } catch (err) {
      return { source: 'local', note: noAnswer(err, 'the alarms of this instance only'), recent: local() };
    }
  }

  /** Take rates per entity summed over the `instances` alive in `view` (undefined: Redis did not answer). */
  async rates(view: FleetInstances): Promise<{ rates: Map<string, number>; instances: number } | undefined> {
    if (view.source === 'local' && this.options.store.kind === 'redis') return undefined;
    const others = new Set(view.instances.filter((i) => i.state === 'alive' && !i.self).map((i) => i.id));
    let rates = new Map<string, number>();
    if (others.size > 0) {
      const published = await this.bounded(this.options.store.rates()).catch(() => undefined);
      if (!published) return undefined;
      rates = fleetRates(published, others);
    }
    for (const [entity, rate] of this.options.self.rates()) rates.set(entity, (rates.get(entity) ?? 0) + rate);
    return { rates, instances: others.size + 1 };
  }

  private async read(): Promise<FleetInstances> {
    const heartbeats = await this.bounded(this.options.store.heartbeats());
    const now = this.options.clock.now();
    const { view, drop } = fleetView(heartbeats, now, this.options.self.id);
    if (drop.length) await this.bounded(this.options.store.drop(drop));
    return this.options.store.kind === 'redis'
      ? { ...view, source: 'redis' }
      : { ...view, source: 'local', note: 'embedded mode (no Redis): this instance is the whole deployment' };
  }

  private async heartbeat(readEpoch = true): Promise<Heartbeat> {
    const s = this.options.self;
    const sampled = s.lastSampleAt();
    // Published as unknown when unread: the heartbeat still says the instance is up.
    const epoch = readEpoch ? await this.bounded(s.epoch()).catch(() => null) : null;
    return {
      id: s.id,
      address: s.address(),
      version: s.version,
      node: s.node,
      startedAt: new Date(s.startedAt).toISOString(),
      workerId: s.workerId(),
      epoch,
      dialect: s.dialect,
      library: s.library,
      clockSkewMs: s.clockSkewMs(),
      lastSampleAt: sampled === undefined ? null : new Date(sampled).toISOString(),
      activeAlarms: s.activeAlarms(),
      at: this.options.clock.now(),
      ttlMs: this.options.ttlMs,
    };
  }

  // `work`, or a rejection once the timeout has passed on the injected clock.
  private async bounded<T>(work: Promise<T>): Promise<T> {
    const answer = await within(this.options.clock, work, READ_TIMEOUT_MS, NO_ANSWER);
    if (answer === NO_ANSWER) throw new Error(`no answer within ${READ_TIMEOUT_MS} ms`);
    return answer;
  }

  private failed(what: string, err: unknown): void {
    const repeated = this.failureLog.admit('fleet');
    if (repeated === undefined) return;
    this.options.log.warn(withRepeated({ err: errorMessage(err) }, repeated), what);
  }
}

function noAnswer(err: unknown, what: string): string {
  return `Redis did not answer (${errorMessage(err)}): ${what}`;
}

/** The heartbeat hash outlives the last heartbeat by the time a gone instance stays listed. */
export function heartbeatHashTtlMs(ttlMs: number): number {
  return ttlMs * GONE_KEPT_TTLS;
}
