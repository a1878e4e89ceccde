import type { EntityRates, FleetAlarm, FleetStore, Heartbeat } from './instances';

// As many alarm records as the Redis stream keeps.
const MAX_ALARMS = 1000;

/** The fleet of one process (embedded mode, unit tests): the Redis store's behaviour, in memory. */
export class MemoryFleetStore implements FleetStore {
  readonly kind = 'memory';
  private readonly alarms: FleetAlarm[] = [];
  private readonly beats = new Map<string, Heartbeat>();
  private readonly published = new Map<string, EntityRates>();

  appendAlarm(alarm: FleetAlarm): Promise<void> {
    this.alarms.push(alarm);
    if (this.alarms.length > MAX_ALARMS) this.alarms.splice(0, this.alarms.length - MAX_ALARMS);
    return Promise.resolve();
  }

  recentAlarms(count: number): Promise<FleetAlarm[]> {
    return Promise.resolve(this.alarms.slice(-count).reverse());
  }

  publish(heartbeat: Heartbeat, rates: EntityRates): Promise<void> {
    this.beats.set(heartbeat.id, heartbeat);
    this.published.set(heartbeat.id, rates);
    return Promise.resolve();
  }

  rates(): Promise<Map<string, EntityRates>> {
    return Promise.resolve(new Map(this.published));
  }

  heartbeats(): Promise<Heartbeat[]> {
    return Promise.resolve([...this.beats.values()]);
  }

  drop(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      this.beats.delete(id);
      this.published.delete(id);
    }
    return Promise.resolve();
  }
}
