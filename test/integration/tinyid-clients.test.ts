import { expect, it } from 'vitest';
import { IdpoolClient } from '../../src/client';
import { registerNew, takeIds } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { suiteInstances } from '../support/suite-instances';

/** One segment as Tinyid's client holds it: ids `(currentId, maxId]`, `delta` apart, `≡ remainder`. */
interface TinySegment {
  current: bigint;
  readonly loadingId: bigint;
  readonly maxId: bigint;
  readonly delta: bigint;
}

/**
 * A client written to Tinyid's algorithm (its `CachedIdGenerator` and
 * `SegmentId`), in TypeScript: segments from `nextSegmentIdSimple` (POST,
 * parameters in the query, empty body; an empty answer is a failure),
 * `currentId` first moved up to the last value below the first id `≡
 * remainder (mod delta)`, then every id `current += delta` while `≤ maxId`;
 * once an id reaches `loadingId` the next segment is fetched in the
 * background, and a spent segment is replaced by the fetched one.
 */
class TinyidStyleClient {
  private current: TinySegment | undefined;
  private next: TinySegment | undefined;
  private loading: Promise<void> | undefined;
  private loadingCurrent: Promise<void> | undefined;
  segments = 0;

  constructor(
    private readonly servers: string[],
    private readonly bizType: string,
    private readonly token: string,
  ) {}

  private async fetchSegment(): Promise<TinySegment> {
    const server = this.servers[Math.floor(Math.random() * this.servers.length)];
    const res = await fetch(`${server}/tinyid/id/nextSegmentIdSimple?token=${this.token}&bizType=${this.bizType}`, {
      method: 'POST',
      body: '',
    });
    const text = (await res.text()).trim();
    if (res.status >= 400 || text === '') throw new Error(`no segment: ${res.status} "${text}"`);
    const [currentId, loadingId, maxId, delta, remainder] = text.split(',').map(BigInt);
    this.segments++;
    let current = currentId;
    // Tinyid's init(): step up to the first id ≡ remainder, then back one delta so the first nextId lands on it.
    if (((current % delta) + delta) % delta !== remainder) {
      while (((current % delta) + delta) % delta !== remainder) current++;
      current -= delta;
    }
    return { current, loadingId, maxId, delta };
  }

  async nextId(): Promise<bigint> {
    for (;;) {
      if (!this.current) {
        this.loadingCurrent ??= this.fetchSegment()
          .then((s) => void (this.current = s))
          .finally(() => (this.loadingCurrent = undefined));
        await this.loadingCurrent;
        continue;
      }
      const segment = this.current;
      segment.current += segment.delta;
      const id = segment.current;
      if (id > segment.maxId) {
        // Spent: the fetched next segment (waiting for one on its way), else a fresh fetch.
        if (this.current === segment) {
          if (!this.next && this.loading) await this.loading;
          if (this.current === segment) {
            this.current = this.next;
            this.next = undefined;
          }
        }
        continue;
      }
      if (id >= segment.loadingId && !this.next && !this.loading) {
        this.loading = this.fetchSegment()
          .then((s) => void (this.next = s))
          .catch(() => undefined)
          .finally(() => (this.loading = undefined));
      }
      return id;
    }
  }
}

describeWithServices(
  'Tinyid-style clients, the SDK and the native API on one entity: no id twice (MariaDB + Redis, 2 instances)',
  { mysql: true, redis: true },
  () => {
    const two = suiteInstances((base) => {
      const env = { ...base, IDPOOL_COMPAT: 'tinyid' };
      return { a: env, b: env };
    });

    it('16 Tinyid-style loops over 4 clients, 4 native takers and an SDK leased buffer, ids ≡ remainder (mod delta)', async () => {
      const { key, secret: token } = await registerNew(two.a.url, 'tinymix', {
        mode: 'trend',
        step: 300,
        delta: 2,
        remainder: 1,
        maxPoolSize: 5000,
      });
      const servers = [two.a.url, two.b.url];
      const owners = new Map<bigint, string>();
      const add = (who: string, id: bigint) => {
        const before = owners.get(id);
        if (before !== undefined) throw new Error(`id ${id} handed out twice: ${before} and ${who}`);
        owners.set(id, who);
      };

      const tinyClients = Array.from({ length: 4 }, () => new TinyidStyleClient(servers, key, token));
      const tinyLoops = tinyClients.flatMap((client, c) =>
        Array.from({ length: 4 }, async (_, l) => {
          for (let i = 0; i < 2500; i++) add(`tinyid ${c}/${l}`, await client.nextId());
        }),
      );
      const native = Array.from({ length: 4 }, async (_, n) => {
        for (let i = 0; i < 40; i++) {
          let res = await takeIds(servers[n % 2], key, token, 50);
          // A pool still filling answers 503 with Retry-After; a client waits and asks again.
          for (let tries = 0; res.status === 503 && tries < 100; tries++) {
            await new Promise((r) => setTimeout(r, 50));
            res = await takeIds(servers[n % 2], key, token, 50);
          }
          expect(res.status).toBe(200);
          for (const id of res.body.ids) add(`native ${n}`, BigInt(id));
        }
      });
      const sdk = new IdpoolClient({
        endpoints: servers,
        entities: { [key]: { secret: token, mode: 'trend', lease: { ids: 'bigint', minSize: 100 } } },
      });
      const leased = sdk.leased(key);
      const sdkLoop = (async () => {
        await leased.open();
        for (let i = 0; i < 20_000; i++) {
          add('sdk', (await leased.nextAsync()) as bigint);
          if (i % 500 === 0) await new Promise((r) => setImmediate(r));
        }
      })();
      await Promise.all([...tinyLoops, ...native, sdkLoop]);
      sdk.close();

      expect(owners.size).toBe(16 * 2500 + 4 * 40 * 50 + 20_000);
      for (const id of owners.keys()) expect(id % 2n).toBe(1n);
      // Every Tinyid-style client leased several segments from both instances' shared line.
      for (const client of tinyClients) expect(client.segments).toBeGreaterThan(5);
    });
  },
);
