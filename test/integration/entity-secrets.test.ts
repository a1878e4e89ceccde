import { expect, it } from 'vitest';
import { idpool, json } from '../support/cli';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, takeIds } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { waitFor } from '../support/wait';
import { suiteInstances } from '../support/suite-instances';

describeWithServices(
  'several secrets per entity, two instances (MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    const two = suiteInstances((base) => ({ a: base, b: base }), { timeoutMs: 60_000 });
    /** The CLI's environment: instance a, as the admin. */
    const env = () => ({ IDPOOL_URL: two.a.url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN });

    /**
     * Whether `secret` opens `key` on both instances. A change made through
     * `a` reaches `b` within its next generation read (~100 ms, docs/security.md):
     * the two must agree within a second.
     */
    const works = async (key: string, secret: string) => {
      let statuses: number[] = [];
      await waitFor(
        async () => {
          statuses = (await Promise.all([takeIds(two.a.url, key, secret), takeIds(two.b.url, key, secret)])).map(
            (r) => r.status,
          );
          return statuses[0] === statuses[1];
        },
        { timeoutMs: 1000, intervalMs: 50, message: `instances disagree on a secret of ${key}` },
      );
      return statuses[0] === 200;
    };

    it('rotate --keep-old-for overlaps old and new on every instance; add, re-add and remove; the same 401 for unknown keys', async () => {
      const key = uniqueKey('secrets');
      const old = json(await idpool(['apps', 'create', key, '--json'], env())).secret as string;
      expect(await works(key, old)).toBe(true);

      const rotated = json(await idpool(['apps', 'rotate-secret', key, '--keep-old-for', '1h', '--json'], env()))
        .secret as string;
      expect(await works(key, rotated)).toBe(true);
      expect(await works(key, old)).toBe(true);

      const given = 'an-imported-tinyid-token-0123';
      const added = json(await idpool(['apps', 'add-secret', key, '--secret', given, '--json'], env()));
      expect(added).toMatchObject({ key, added: true, expiresAt: null });
      expect(added.secret).toBeUndefined();
      expect(await works(key, given)).toBe(true);
      expect(json(await idpool(['apps', 'add-secret', key, '--secret', given, '--json'], env()))).toMatchObject({
        added: false,
        id: added.id,
      });
      const shown = json(await idpool(['apps', 'show', key, '--json'], env()));
      expect(shown.secrets).toHaveLength(3);
      expect(shown.secrets.filter((s: { expiresAt: string | null }) => s.expiresAt !== null)).toHaveLength(1);
      expect(JSON.stringify(shown)).not.toContain(given);

      const removed = await idpool(['apps', 'remove-secret', key, added.id], env());
      expect(removed.code, removed.stderr).toBe(0);
      expect(await works(key, given)).toBe(false);

      // Without an overlap the old secrets stop at once, on both instances.
      const fresh = json(await idpool(['apps', 'rotate-secret', key, '--json'], env())).secret as string;
      expect(await works(key, fresh)).toBe(true);
      expect(await works(key, rotated)).toBe(false);
      expect(await works(key, old)).toBe(false);

      const wrong = await takeIds(two.a.url, key, 'x'.repeat(43));
      const unknown = await takeIds(two.a.url, uniqueKey('nobody'), fresh);
      expect([wrong.status, unknown.status]).toEqual([401, 401]);
      expect(wrong.body).toEqual(unknown.body);

      const bad = await call(`${two.a.url}/admin/apps/${key}/secrets`, {
        token: ADMIN_TOKEN,
        body: { secret: 'has space 0123456789' },
      });
      expect(bad.status).toBe(400);
      const long = await call(`${two.a.url}/admin/apps/${key}/secret`, {
        token: ADMIN_TOKEN,
        body: { keepOldForSeconds: 31 * 86400 },
      });
      expect(long.status).toBe(400);
      expect(await works(key, fresh)).toBe(true);
    });
  },
);
