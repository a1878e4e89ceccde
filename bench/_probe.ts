import { createConnection } from 'mysql2/promise';
import { loadConfig } from '../src/config/config';
import { createService } from '../src/service';
(async () => {
  const c = await createConnection({ uri: 'mysql://root@127.0.0.1:3306/' });
  await c.query('DROP DATABASE IF EXISTS idpool_probe'); await c.query('CREATE DATABASE idpool_probe');
  const config = loadConfig({ IDPOOL_DATABASE_URL: 'mysql://root@127.0.0.1:3306/idpool_probe', IDPOOL_REDIS_URL: 'redis://127.0.0.1:6379/13', IDPOOL_ADMIN_TOKEN: 'x'.repeat(20), IDPOOL_REQUEST_LOG: 'false' });
  const service = await createService(config, { redisPrefix: 'probe' + process.pid });
  const base = `http://127.0.0.1:${await service.listen(0)}`;
  const reg = async (n: number, clients: number, tag: string) => {
    let i = 0; const t = performance.now();
    await Promise.all(Array.from({ length: clients }, async () => { while (i < n) { const key = `${tag}-${i++}`;
      const r = await fetch(`${base}/admin/apps`, { method: 'POST', headers: { authorization: 'Bearer ' + 'x'.repeat(20), 'content-type': 'application/json' }, body: JSON.stringify({ key, step: 100, maxPoolSize: 1000, maxSizePerTimes: 100 }) });
      if (r.status !== 201) throw new Error(await r.text()); await r.arrayBuffer(); } }));
    return Math.round(n / ((performance.now() - t) / 1000));
  };
  console.log('http 1 client', await reg(300, 1, 'a'), '8 clients', await reg(600, 8, 'b'));
  // registry alone (no HTTP)
  const registry = (service as any).registry ?? undefined;
  await service.stop();
  await c.query('DROP DATABASE idpool_probe'); await c.end();
})();
