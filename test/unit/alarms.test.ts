import { describe, expect, it } from 'vitest';
import { type AlarmWebhookPayload, Alarms } from '../../src/ops/alarms';
import { FakeClock } from '../support/clock';

function recordingLog() {
  const lines: { level: string; obj: Record<string, unknown>; msg?: string }[] = [];
  const log = {
    debug: (obj: object, msg?: string) => lines.push({ level: 'debug', obj: obj as Record<string, unknown>, msg }),
    info: (obj: object, msg?: string) => lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
    warn: (obj: object, msg?: string) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    error: (obj: object, msg?: string) => lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
    child: () => log,
  };
  return { log, lines };
}

function setup(dedupeMs = 60_000) {
  const clock = new FakeClock({ sleep: 'advance' });
  const { log, lines } = recordingLog();
  const sent: AlarmWebhookPayload[] = [];
  const alarms = new Alarms({
    clock,
    log,
    alertDedupeMs: dedupeMs,
    instance: 'test:1',
    sink: { send: async (p) => void sent.push(p) },
  });
  return { clock, lines, sent, alarms };
}

describe('Alarms', () => {
  it('a renamed alarm carries its former name as alias, and is counted under both, for one release', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const { log, lines } = recordingLog();
    const sent: AlarmWebhookPayload[] = [];
    const counted: string[] = [];
    const alarms = new Alarms({
      clock,
      log,
      alertDedupeMs: 60_000,
      instance: 'test:1',
      sink: { send: async (p) => void sent.push(p) },
      onRaised: (name) => counted.push(name),
    });
    alarms.raise({ name: 'redis_epoch_changed', severity: 'critical', message: 'epoch changed' });
    alarms.raise({ name: 'pool_discarded', severity: 'warning', entityKey: 'orders', message: 'discarded' });
    await alarms.flush();
    expect(lines.map((l) => l.obj)).toEqual([
      expect.objectContaining({ alarm: 'redis_epoch_changed', alias: 'redis_server_changed', severity: 'critical' }),
      expect.not.objectContaining({ alias: expect.anything() }),
    ]);
    expect(sent.map((p) => [p.alarm, p.alias])).toEqual([
      ['redis_epoch_changed', 'redis_server_changed'],
      ['pool_discarded', undefined],
    ]);
    expect(counted).toEqual(['redis_epoch_changed', 'redis_server_changed', 'pool_discarded']);
  });

  it('logs a condition once when it turns on and once when it turns off', async () => {
    const { alarms, lines, sent } = setup();
    const low = {
      name: 'pool_low',
      severity: 'warning',
      entityKey: 'orders',
      message: 'pool low',
      details: { size: 1 },
    } as const;
    alarms.set(low);
    alarms.set(low);
    alarms.set(low);
    alarms.clear('pool_low', 'orders');
    await alarms.flush();
    expect(lines.map((l) => [l.level, l.obj.alarm])).toEqual([
      ['warn', 'pool_low'],
      ['info', 'pool_low'],
    ]);
    expect(lines[0].obj).toMatchObject({ alarm: 'pool_low', entityKey: 'orders', severity: 'warning', size: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      alarm: 'pool_low',
      status: 'firing',
      entityKey: 'orders',
      instance: 'test:1',
      service: 'idpool',
    });
    expect(alarms.recent().map((r) => r.status)).toEqual(['resolved', 'firing']);
  });

  it('posts a flapping condition once per de-duplication window', async () => {
    const { alarms, sent, clock } = setup(60_000);
    const c = { name: 'pool_low', severity: 'warning', entityKey: 'orders', message: 'low' } as const;
    for (let i = 0; i < 10; i++) {
      alarms.set(c);
      clock.advance(1000);
      alarms.clear('pool_low', 'orders');
      clock.advance(1000);
    }
    await alarms.flush();
    expect(sent).toHaveLength(1);
    clock.advance(60_000);
    alarms.set(c);
    await alarms.flush();
    expect(sent).toHaveLength(2);
  });

  it('keeps entities apart: the same alarm on two entities posts twice', async () => {
    const { alarms, sent } = setup();
    alarms.set({ name: 'forecast_js_safe_limit', severity: 'warning', entityKey: 'a', message: 'a' });
    alarms.set({ name: 'forecast_js_safe_limit', severity: 'warning', entityKey: 'b', message: 'b' });
    await alarms.flush();
    expect(sent.map((s) => s.entityKey).sort()).toEqual(['a', 'b']);
  });

  it('folds a burst of the same event into one log line a second and one post', async () => {
    const { alarms, sent, lines, clock } = setup();
    const ev = { name: 'pool_exhausted', severity: 'critical', entityKey: 'orders', message: 'exhausted' } as const;
    for (let i = 0; i < 50; i++) alarms.raise(ev);
    clock.advance(1500);
    alarms.raise(ev);
    await alarms.flush();
    const logged = lines.filter((l) => l.obj.alarm === 'pool_exhausted');
    expect(logged.map((l) => l.level)).toEqual(['error', 'error']);
    expect(logged[1].obj.repeatsFolded).toBe(49);
    expect(sent).toHaveLength(1);
  });

  it('logs a failed webhook and keeps going', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const { log, lines } = recordingLog();
    let calls = 0;
    const alarms = new Alarms({
      clock,
      log,
      alertDedupeMs: 0,
      instance: 'x',
      sink: {
        send: async () => {
          calls++;
          if (calls === 1) throw new Error('receiver down');
        },
      },
    });
    alarms.raise({ name: 'lease_lost', severity: 'critical', message: 'lost' });
    clock.advance(2000);
    alarms.raise({ name: 'lease_lost', severity: 'critical', message: 'lost' });
    await alarms.flush();
    expect(calls).toBe(2);
    expect(lines.some((l) => l.msg === 'alarm webhook failed' && l.obj.err === 'receiver down')).toBe(true);
  });
});
