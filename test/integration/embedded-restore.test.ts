import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, alarmLines, startInstance } from '../support/processes';
import { type WebhookReceiver, startReceiver } from '../support/webhook';
import { waitFor } from '../support/wait';

/** `count` ids of `key` in batches of at most 1,000, every answer a 200 at once. */
async function take(instance: Instance, key: string, secret: string, count: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < count) {
    const res = await takeIds(instance.url, key, secret, Math.min(1000, count - out.length));
    if (res.status !== 200) throw new Error(`take: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.ids);
  }
  return out;
}

describe('the embedded service after its database file is restored (issue 30)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-restore-'));
  const file = join(dir, 'idpool.db');
  const env = { IDPOOL_DATABASE_URL: `sqlite:${file}`, IDPOOL_REQUEST_LOG: '0' };
  const running: Instance[] = [];
  let receiver: WebhookReceiver | undefined;
  const start = async () => {
    receiver ??= await startReceiver();
    const instance = await startInstance({ ...env, IDPOOL_ALERT_WEBHOOK_URL: receiver.url });
    running.push(instance);
    return instance;
  };
  const stop = async (instance: Instance) => {
    expect(await instance.stop()).toBe(0);
    // A clean stop checkpoints the WAL into the file: the file alone is the database.
    expect(existsSync(`${file}-wal`)).toBe(false);
  };
  afterAll(async () => {
    await Promise.all(running.map((i) => i.stop()));
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes 5,000, backs up idpool.db, takes 50,000, restores it: the next 1,000 ids are new, at once, with one database_behind', async () => {
    let instance = await start();
    // The first start has no high-water file yet, and says so.
    expect(instance.output()).toMatch(/no high-water file beside the SQLite file/);
    const secret = await register(instance.url, { key: 'orders', maxSizePerTimes: 1000, maxSizePerSecond: 0 });
    const seen = new Set<string>(await take(instance, 'orders', secret, 5000));
    await stop(instance);
    copyFileSync(file, join(dir, 'backup.db'));

    instance = await start();
    expect(instance.output()).not.toMatch(/high-water file/);
    for (const id of await take(instance, 'orders', secret, 50_000)) seen.add(id);
    expect(seen.size).toBe(55_000);
    const highest = [...seen].reduce((a, b) => (BigInt(b) > BigInt(a) ? b : a));
    await stop(instance);

    copyFileSync(join(dir, 'backup.db'), file);
    const restoredAt = Date.now();
    instance = await start();
    // Carried at start-up, before the first request: `idpool apps show` shows it.
    const behind = alarmLines(instance, 'database_behind');
    expect(behind).toHaveLength(1);
    expect(behind[0]).toMatchObject({ entityKey: 'orders', record: 'high-water file', severity: 'critical' });
    expect(BigInt(behind[0].carriedTo as string)).toBeGreaterThan(BigInt(highest));
    const shown = await call(`${instance.url}/admin/apps/orders`, { token: ADMIN_TOKEN });
    expect(BigInt(shown.body.currentOffset)).toBeGreaterThan(BigInt(highest));

    const after = await take(instance, 'orders', secret, 1000);
    expect(Date.now() - restoredAt).toBeLessThan(30_000);
    for (const id of after) expect(seen.has(id), `id ${id} was handed out before the restore`).toBe(false);
    expect(BigInt(after[0])).toBeGreaterThan(BigInt(highest));
    expect(alarmLines(instance, 'database_behind')).toHaveLength(1);
    const ops = await call(`${instance.url}/admin/ops`, { token: ADMIN_TOKEN });
    expect(JSON.stringify(ops.body)).toContain('database_behind');
    // Posted to the webhook, and counted.
    await waitFor(() => receiver!.calls.some((c) => c.alarm === 'database_behind'), { timeoutMs: 5000 });
    expect(receiver!.calls.filter((c) => c.alarm === 'database_behind')).toEqual([
      expect.objectContaining({ severity: 'critical', entityKey: 'orders', status: 'firing' }),
    ]);
    const metrics = await (await fetch(`${instance.url}/metrics`)).text();
    expect(metrics).toContain('idpool_database_behind_total{entity="orders"} 1');
    await stop(instance);
  }, 120_000);

  it('an unreadable high-water file is said at start-up, then written again', async () => {
    writeFileSync(`${file}.high-water`, '{ not json');
    const instance = await start();
    expect(instance.output()).toMatch(/the high-water file is unreadable/);
    const secret = await register(instance.url, { key: 'invoices', maxSizePerTimes: 10, maxSizePerSecond: 0 });
    await take(instance, 'invoices', secret, 10);
    const content = JSON.parse(readFileSync(`${file}.high-water`, 'utf8')) as { entities: Record<string, string> };
    expect(Object.keys(content.entities)).toContain('invoices');
    await stop(instance);
  }, 60_000);
});
