import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call } from '../support/http';
import { type PrivateMariadb, startPrivateMariadb } from '../support/mariadb';
import { type Instance, startInstance } from '../support/processes';

describeWithServices('entity names', { privateMariadb: true }, () => {
  let server: PrivateMariadb | undefined;
  let instance: Instance;

  beforeAll(async () => {
    // latin1 as server default, as on older MySQL/MariaDB installs: the schema idpool creates must still hold any name.
    server = await startPrivateMariadb({
      serverArgs: ['--character-set-server=latin1', '--collation-server=latin1_swedish_ci'],
    });
    instance = await startInstance({ IDPOOL_DATABASE_URL: server.url });
  }, 90_000);

  afterAll(async () => {
    await instance?.stop();
    await server?.destroy();
  });

  it('stores any printable name (emoji, CJK, RTL) in the schema it creates on a latin1 server', async () => {
    const names = ['订单 🚀 注文', 'رقم الطلب', '👨‍👩‍👧 family', 'Ünïcödé — ok'];
    for (const [i, name] of names.entries()) {
      const created = await call(`${instance.url}/admin/apps`, {
        token: ADMIN_TOKEN,
        body: { key: `names-${i}`, name },
      });
      expect(created.status, name).toBe(201);
      const shown = await call(`${instance.url}/admin/apps/names-${i}`, { token: ADMIN_TOKEN });
      expect(shown.body.name).toBe(name);
    }
    const renamed = await call(`${instance.url}/admin/apps/names-0`, {
      token: ADMIN_TOKEN,
      method: 'PATCH',
      body: { name: '🚀🚀 新しい名前' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('🚀🚀 新しい名前');
  });

  it('refuses control characters with a 400 naming the field, and creates nothing', async () => {
    const bad = [
      'bell\u0007',
      'paint \u001b[31mred',
      'two\nlines',
      'tab\there',
      'del\u007f',
      'c1\u009b',
      'rtl \u202espoof',
      'isolate\u2066x',
      'lone \ud800 surrogate',
    ];
    for (const [i, name] of bad.entries()) {
      const res = await call(`${instance.url}/admin/apps`, {
        token: ADMIN_TOKEN,
        body: { key: `bad-name-${i}`, name },
      });
      expect(res.status, JSON.stringify(name)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message).toMatch(/^name: must (not contain control characters|be well-formed Unicode)/);
      expect((await call(`${instance.url}/admin/apps/bad-name-${i}`, { token: ADMIN_TOKEN })).status).toBe(404);
    }
    const patch = await call(`${instance.url}/admin/apps/names-1`, {
      token: ADMIN_TOKEN,
      method: 'PATCH',
      body: { name: 'x\u001by' },
    });
    expect(patch.status).toBe(400);
  });
});
