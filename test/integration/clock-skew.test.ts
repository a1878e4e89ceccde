import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, parseMetrics, register, takeIds } from '../support/http';
import { type Instance, LIBFAKETIME, alarmLines, startInstance } from '../support/processes';
import { waitFor } from '../support/wait';

/**
 * Issue 36 item 5: a running instance's clock moved with libfaketime (the
 * offset in a file it reads at every clock call), its Redis and database
 * clocks left alone. Past half of IDPOOL_MAX_CLOCK_SKEW_MS the alarm
 * `clock_skew` and the skew in /metrics, /admin/instances; past all of it
 * snowflake takes answer 503 `clock_skew` with Retry-After while segment
 * takes go on; back within it, snowflake ids again and the alarm resolved.
 */

/** Whole seconds of offset (what libfaketime's relative form takes): alarm past 2 s, refusals past 4 s. */
const MAX_SKEW_MS = 4000;

describeWithServices('clocks checked while running (libfaketime)', { mysql: true, redis: true, faketime: true }, () => {
  let setup: StoreSetup;
  let dir: string;
  let offsetFile: string;
  let instance: Instance;
  let flake: { key: string; secret: string };
  let mono: { key: string; secret: string };

  const setOffset = (seconds: number) => writeFileSync(offsetFile, `${seconds >= 0 ? '+' : ''}${seconds}\n`);
  const ownSkew = async (): Promise<Record<string, number | null>> => {
    const res = await call(`${instance.url}/admin/instances`, { token: ADMIN_TOKEN });
    return (res.body.instances as { self: boolean; clockSkewMs: Record<string, number | null> }[]).find((i) => i.self)!
      .clockSkewMs;
  };
  const metric = async (name: string) =>
    parseMetrics((await call<string>(`${instance.url}/metrics`, { token: ADMIN_TOKEN })).body).get(name);

  beforeAll(async () => {
    setup = await mysqlRedisSetup();
    dir = mkdtempSync(join(tmpdir(), 'idpool-faketime-'));
    offsetFile = join(dir, 'offset');
    setOffset(0);
    instance = await startInstance(
      {
        ...setup.env,
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME_TIMESTAMP_FILE: offsetFile,
        // Read the file at every clock call; timers and the lease's validity run on the real monotonic clock.
        FAKETIME_NO_CACHE: '1',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        IDPOOL_MAX_CLOCK_SKEW_MS: String(MAX_SKEW_MS),
        IDPOOL_CLOCK_CHECK_MS: '300',
        IDPOOL_OPS_SAMPLE_MS: '200',
        IDPOOL_INSTANCE_TTL_MS: '1000',
      },
      120_000,
    );
    flake = { key: uniqueKey('flake'), secret: '' };
    flake.secret = await register(instance.url, { key: flake.key, mode: 'snowflake' });
    mono = { key: uniqueKey('mono'), secret: '' };
    mono.secret = await register(instance.url, { key: mono.key, step: 100 });
  }, 120_000);

  afterAll(async () => {
    await instance?.stop();
    await setup?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('alarms past half the bound, refuses snowflake ids past it, and serves again once the clock is back', async () => {
    expect((await takeIds(instance.url, flake.key, flake.secret, 5)).status).toBe(200);
    const initial = await waitFor(async () => {
      const s = await ownSkew();
      return s.redis !== null && s.database !== null && s;
    });
    expect(Math.abs(initial.redis!)).toBeLessThan(500);

    // 3 s ahead: past half of 4 s, within it.
    setOffset(3);
    await waitFor(async () => alarmLines(instance, 'clock_skew').length > 0, { message: 'the clock_skew alarm' });
    // The heartbeat carrying the new reading may follow the alarm by one beat.
    const ahead = await waitFor(async () => {
      const s = await ownSkew();
      return s.redis !== null && s.redis > 2500 && s;
    });
    expect(ahead.database).toBeGreaterThan(2000);
    expect(alarmLines(instance, 'clock_skew')[0]).toMatchObject({ severity: 'warning' });
    expect((await takeIds(instance.url, flake.key, flake.secret, 5)).status).toBe(200);
    expect(await metric('idpool_clock_skew_seconds{against="redis"}')).toBeGreaterThan(2.5);

    // 6 s ahead: past the bound. Snowflake ids refused, segment ids served.
    setOffset(6);
    const refused = await waitFor(async () => {
      const res = await takeIds(instance.url, flake.key, flake.secret, 5);
      return res.status === 503 && res;
    });
    expect(refused.body.error?.code).toBe('clock_skew');
    expect(refused.body.error?.message).toMatch(
      /ms ahead of Redis's or the database's, more than IDPOOL_MAX_CLOCK_SKEW_MS=4000/,
    );
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await takeIds(instance.url, mono.key, mono.secret, 5)).status).toBe(200);
    // Redis's check may have refused first; the database's reading follows at its next check.
    await waitFor(async () => ((await metric('idpool_clock_skew_seconds{against="database"}')) ?? 0) > 5, {
      message: 'the database skew read past 5 s',
    });

    // Back: snowflake ids again, the alarm resolved.
    setOffset(0);
    await waitFor(async () => (await takeIds(instance.url, flake.key, flake.secret, 5)).status === 200, {
      message: 'snowflake ids again',
    });
    await waitFor(
      async () =>
        instance
          .output()
          .split('\n')
          .some((l) => l.includes('"alarm":"clock_skew"') && l.includes('"status":"resolved"')),
      { message: 'clock_skew resolved' },
    );
    // As above, the heartbeat carrying the reading back may follow the resolution by a beat (CI at 16:18 read 5,999 ms).
    await waitFor(async () => Math.abs((await ownSkew()).redis ?? Infinity) < 500, {
      message: 'the instance view back within 500 ms',
    });
  });
});
