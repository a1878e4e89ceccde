import { ALARM_STREAM_LENGTH, type EntityRates, type FleetAlarm, type FleetStore, type Heartbeat } from './instances';

/** The fleet of one process (embedded mode, unit tests): the Redis store's behaviour, in memory. */
export class MemoryFleetStore implements FleetStore {
  readonly kind = 'memory';
  private readonly alarms: FleetAlarm[] = [];
  private readonly beats = new Map<string, Heartbeat>();
  private readonly published = new Map<string, EntityRates>();

  async appendAlarm(alarm: FleetAlarm): Promise<void> {
    this.alarms.push(alarm);
    if (this.alarms.length > ALARM_STREAM_LENGTH) this.alarms.splice(0, this.alarms.length - ALARM_STREAM_LENGTH);
  }

  async recentAlarms(count: number): Promise<FleetAlarm[]> {
    return this.alarms.slice(-count).reverse();
  }

  async publish(heartbeat: Heartbeat, rates: EntityRates): Promise<void> {
    this.beats.set(heartbeat.id, heartbeat);
    this.published.set(heartbeat.id, rates);
  }

  async rates(): Promise<Map<string, EntityRates>> {
    return new Map(this.published);
  }

  async heartbeats(): Promise<Heartbeat[]> {
    return [...this.beats.values()];
  }

  async drop(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      this.beats.delete(id);
      this.published.delete(id);
    }
  }
}
