import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { OpsConfig } from './settings';
import { Ring } from './forecast';
import { errorMessage } from '../errors';
import { RepeatLimiter } from '../repeat-limiter';
import { type AlarmName, type AlarmSeverity, aliasOf } from './alarm-table';

export interface AlarmInput {
  readonly name: AlarmName;
  readonly severity: AlarmSeverity;
  /** The entity it concerns, if any (part of the de-duplication key). */
  readonly entityKey?: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

export interface AlarmRecord extends AlarmInput {
  /** ISO time it was raised. */
  readonly at: string;
  readonly status: 'firing' | 'resolved';
  /** Whether this one was (or will be) posted to the webhook. */
  readonly notified: boolean;
}

export interface AlarmWebhookPayload extends Pick<AlarmRecord, 'status' | 'severity' | 'message' | 'at'> {
  readonly alarm: AlarmName;
  /** The alarm's former name, for one release after a rename. */
  readonly alias?: AlarmName;
  readonly entityKey: string | null;
  readonly details: Record<string, unknown>;
  readonly service: 'idpool';
  readonly instance: string;
}

export interface AlarmsOptions extends Pick<OpsConfig, 'alertDedupeMs'> {
  clock: Clock;
  log: Logger;
  /** Where to POST (IDPOOL_ALERT_WEBHOOK_URL); none = log only. */
  sink?: Pick<WebhookSink, 'send'>;
  /** Names this instance in the payload (host:pid). */
  instance: string;
  /** Counts raised alarms (metrics). */
  onRaised?(name: AlarmName, severity: AlarmSeverity): void;
  /** Every record as it joins the recent ones (the fleet stream, `fleet/fleet.ts`). */
  onRecord?(record: AlarmRecord): void;
}

/** Recent alarms each instance keeps for the dashboard. */
export const RECENT_ALARMS = 100;
/** One log line a second per repeated event: enough to see it, not enough to flood. */
const EVENT_LOG_INTERVAL_MS = 1000;
const WEBHOOK_TIMEOUT_MS = 5000;

/**
 * Each alarm is one log line and, with a webhook, one POST de-duplicated per (name, entity). Conditions
 * (`set`/`clear`, each sampler run) log when they turn on and off; events (`raise`) log each time.
 */
export class Alarms {
  private readonly active = new Map<string, AlarmInput>();
  private readonly lastNotified = new Map<string, number>();
  /** Events of one key within {@link EVENT_LOG_INTERVAL_MS} of the last logged are counted into the next. */
  private readonly bursts: RepeatLimiter;
  private readonly recentRing = new Ring<AlarmRecord>(RECENT_ALARMS);
  private delivery: Promise<void> = Promise.resolve();
  private pending = 0;
  /** This process's name in its alarms (host:pid); {@link recent} holds only its own (the fleet's are in Redis). */
  readonly instance: string;

  constructor(private readonly options: AlarmsOptions) {
    this.bursts = new RepeatLimiter(options.clock, { windowMs: EVENT_LOG_INTERVAL_MS, maxKeys: 10_000 });
    this.instance = options.instance;
  }

  /** An event: logged each time, a burst of one (an exhausted pool's requests) once a second with its count. */
  raise(alarm: AlarmInput): void {
    const folded = this.bursts.admit(keyOf(alarm));
    if (folded === undefined) return;
    this.fire(folded ? { ...alarm, details: { ...alarm.details, repeatsFolded: folded } } : alarm);
  }

  /** A condition holds now: raised when it was not already on. */
  set(alarm: AlarmInput): void {
    const key = keyOf(alarm);
    const on = this.active.has(key);
    this.active.set(key, alarm);
    if (!on) this.fire(alarm);
  }

  /** A condition no longer holds. */
  clear(name: AlarmName, entityKey?: string): void {
    const key = keyOf({ name, entityKey });
    const was = this.active.get(key);
    if (!was) return;
    this.active.delete(key);
    this.options.log.info({ alarm: name, entityKey, status: 'resolved' }, `alarm resolved: ${name}`);
    this.record({ ...was, at: new Date(this.options.clock.now()).toISOString(), status: 'resolved', notified: false });
  }

  /** Conditions on now. */
  activeAlarms(): AlarmInput[] {
    return [...this.active.values()];
  }

  /** Newest first. */
  recent(): AlarmRecord[] {
    return [...this.recentRing.toArray()].reverse();
  }

  /** Resolves when every webhook POST queued so far has been attempted (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.pending > 0) await this.delivery;
  }

  private record(record: AlarmRecord): void {
    this.recentRing.push(record);
    this.options.onRecord?.(record);
  }

  private fire(alarm: AlarmInput): void {
    const now = this.options.clock.now();
    const key = keyOf(alarm);
    const last = this.lastNotified.get(key);
    const sink = this.options.sink;
    const notify = sink !== undefined && (last === undefined || now - last >= this.options.alertDedupeMs);
    const at = new Date(now).toISOString();
    const alias = aliasOf(alarm.name);
    logAlarm(this.options.log, alarm);
    this.options.onRaised?.(alarm.name, alarm.severity);
    if (alias) this.options.onRaised?.(alias, alarm.severity);
    this.record({ ...alarm, at, status: 'firing', notified: notify });
    if (!notify) return;
    this.lastNotified.set(key, now);
    const payload: AlarmWebhookPayload = {
      alarm: alarm.name,
      ...(alias ? { alias } : {}),
      status: 'firing',
      severity: alarm.severity,
      entityKey: alarm.entityKey ?? null,
      message: alarm.message,
      details: alarm.details ?? {},
      at,
      service: 'idpool',
      instance: this.instance,
    };
    // One POST at a time, in order; a slow receiver never blocks a request.
    this.pending++;
    this.delivery = this.delivery
      .then(() => sink.send(payload))
      .catch((err: unknown) =>
        this.options.log.warn({ alarm: alarm.name, err: errorMessage(err) }, 'alarm webhook failed'),
      )
      .finally(() => this.pending--);
  }
}

/** An alarm's log line: `warn` for warnings, `error` for critical; a renamed alarm carries its former name as `alias`. */
export function logAlarm(log: Logger, alarm: AlarmInput): void {
  const alias = aliasOf(alarm.name);
  const line = {
    alarm: alarm.name,
    ...(alias ? { alias } : {}),
    severity: alarm.severity,
    entityKey: alarm.entityKey,
    ...alarm.details,
  };
  log[alarm.severity === 'critical' ? 'error' : 'warn'](line, alarm.message);
}

/** The key of an alarm's (name, entity): one condition on, one de-duplicated post. */
export function keyOf(alarm: { name: AlarmName; entityKey?: string }): string {
  return alarm.entityKey === undefined ? alarm.name : `${alarm.name}\u0000${alarm.entityKey}`;
}

/** Posts alarms as JSON, retrying once on a network error or 5xx (a restarting receiver; more would delay the rest). */
export class WebhookSink {
  constructor(private readonly url: string) {}

  async send(payload: AlarmWebhookPayload): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let status: number;
      try {
        const res = await fetch(this.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'idpool-alarms' },
          body: JSON.stringify(payload),
          signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
        });
        await res.arrayBuffer().catch(() => undefined);
        status = res.status;
      } catch (err) {
        if (attempt === 2) throw err;
        continue;
      }
      if (status < 400) return;
      // A 4xx refuses the alarm: sending it again would be refused too.
      if (status < 500 || attempt === 2) throw new Error(`webhook answered ${status}`);
    }
  }
}
