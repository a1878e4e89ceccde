import { describe, expect, it } from 'vitest';
import { secretMatches } from '../../src/apps/app';
import { FakeAppStore } from '../../src/apps/fake-app-store';
import { AppRegistry } from '../../src/apps/registry';
import type { Clock } from '../../src/clock';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../src/errors';

function clockAt(start: number): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => t, monotonic: () => t, sleep: async () => undefined, advance: (ms) => void (t += ms) };
}

describe('entity registry over the fake store (no I/O)', () => {
  it('registers with defaults, keeps the secret only as a hash, tells subscribers', async () => {
    const store = new FakeAppStore();
    const registry = new AppRegistry(store, clockAt(1_000_000));
    const seen: string[] = [];
    registry.subscribe({ onRegistered: (app) => void seen.push(`+${app.key}`), onRetired: (key) => void seen.push(`-${key}`) });
    const { app, secret } = await registry.register({ key: 'orders', mode: 'monotonic' });
    expect(app).toMatchObject({ key: 'orders', step: 1000, maxSizePerTimes: 1000, maxSizePerSecond: 5000, minSizePercent: 80 });
    expect(app.secretHash).not.toContain(secret);
    expect(secretMatches(secret, app.secretHash)).toBe(true);
    await registry.retire('orders');
    expect(seen).toEqual(['+orders', '-orders']);
    expect(registry.get('orders')).toBeUndefined();
  });

  it('a retired key is never registered again; bad rules change nothing', async () => {
    const store = new FakeAppStore();
    const registry = new AppRegistry(store, clockAt(1_000_000));
    await registry.register({ key: 'users', mode: 'monotonic' });
    await registry.retire('users');
    await expect(registry.register({ key: 'users', mode: 'monotonic' })).rejects.toBeInstanceOf(ConflictError);
    await expect(registry.register({ key: 'bad', mode: 'monotonic', step: 1000, maxPoolSize: 1000, minSizePercent: 50 })).rejects.toBeInstanceOf(InvalidRequestError);
    expect(await store.exists('bad')).toBe(false);
    await expect(registry.update('nobody', { step: 10 })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refresh picks up changes made through another instance, and unknown keys cost one lookup a second', async () => {
    const store = new FakeAppStore();
    const clock = clockAt(1_000_000);
    const here = new AppRegistry(store, clock);
    const there = new AppRegistry(store, clock);
    await here.load();
    expect(await here.find('late')).toBeUndefined();
    expect(await here.find('late')).toBeUndefined();
    expect(store.calls.findLive).toBe(1);
    clock.advance(10);
    await there.register({ key: 'late', mode: 'trend' });
    await here.refresh();
    expect(here.get('late')?.mode).toBe('trend');
    await there.update('late', { step: 500 });
    clock.advance(10);
    await here.refresh();
    expect(here.get('late')?.step).toBe(500);
  });
});
