import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call } from '../support/http';
import { type Instance, type MariaDbServer, startInstance, startMariaDbServer } from '../support/processes';

const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';

describe('entity names', () => {
  let server: MariaDbServer | undefined;
  let instance: Instance | undefined;

  beforeAll(async () => {
    // latin1 as server default, as on older MySQL/MariaDB installs: the schema idpool creates must still hold any name.
    server = await startMariaDbServer(['--character-set-server=latin1', '--collation-server=latin1_swedish_ci']);
    if (!server) {
      if (REQUIRED) throw new Error('!!! mariadbd not installed and IDPOOL_REQUIRE_SERVICES=1');
      process.stderr.write('\n!!! mariadbd not installed: SKIPPING the entity name tests\n\n');
      return;
    }
    instance = await startInstance({ IDPOOL_DATABASE_URL: server.url('idpool_names') });
  }, 90_000);

  afterAll(async () => {
    await instance?.stop();
    await server?.stop();
  });

  it('stores any printable name (emoji, CJK, RTL) in the schema it creates on a latin1 server', async (ctx) => {
    if (!instance) return ctx.skip();
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

  it('refuses control characters with a 400 naming the field, and creates nothing', async (ctx) => {
    if (!instance) return ctx.skip();
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
