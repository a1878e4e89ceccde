/**
 * Issue 35's proof: three instances whose clocks differ by seconds
 * (libfaketime; IDPOOL_MAX_CLOCK_SKEW_MS allows it) take business numbers
 * under load across a period boundary (a fixed-offset zone brings its
 * midnight half a minute away), one of them killed and restarted across it,
 * and a direct consumer pops beside them with `FCALL idpool_pop`.
 * Every number unique, dated by the Redis clock (the machine's: this
 * process's own), the new day's sequence starting at 1, and no take of the
 * instances that stayed up refused at the boundary.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { numberKeys } from '../../src/redis/keys';
import { describeWithServices } from '../support/describe-with-services';
import { call, register } from '../support/http';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';
import { type Instance, LIBFAKETIME, startInstance } from '../support/processes';
import { sleep } from '../support/wait';

interface Answer {
  instance: number;
  client: number;
  sentAt: number;
  doneAt: number;
  status: number;
  numbers: string[];
}

/** Seconds each instance's clock is moved (the database clock allows 5 s here). */
const SKEWS_S = [0, 3, -3];
const FORMAT = 'B{yyyy}{MM}{dd}-{seq:7}';
const dateOf = (n: string) => n.slice(1, 9);
const seqOf = (n: string) => Number(n.slice(10));

/** The offset `±HH:MM` whose midnight falls at `atMs` (a whole minute). */
function zoneWithMidnightAt(atMs: number): string {
  let minutes = ((-Math.round(atMs / 60_000) % 1440) + 1440) % 1440;
  if (minutes > 14 * 60) minutes -= 1440;
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The calendar date `yyyyMMdd` of `ms` in the offset zone. */
function dateIn(zone: string, ms: number): string {
  const sign = zone.startsWith('-') ? -1 : 1;
  const offset = sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
  return new Date(ms + offset).toISOString().slice(0, 10).replaceAll('-', '');
}

describeWithServices(
  'business numbers across a boundary: three skewed instances, one restarted (MariaDB + private Redis)',
  { mysql: true, faketime: true },
  () => {
    let deployment: PrivateDeployment;
    const instances: Instance[] = [];
    const started: Instance[] = [];
    /** One instance more, given a minute and a half: the machine running the suite may be loaded. */
    const start = async (skewS: number) => {
      const instance = await startInstance(
        { IDPOOL_DATABASE_URL: deployment.databaseUrl, IDPOOL_REDIS_URL: deployment.redis.url, ...env(skewS) },
        90_000,
      );
      started.push(instance);
      return instance;
    };
    const env = (skewS: number): Record<string, string> => ({
      IDPOOL_MAX_CLOCK_SKEW_MS: '5000',
      IDPOOL_WORKER_ID: '1',
      IDPOOL_WORKER_ID_UNSAFE: '1',
      ...(skewS !== 0 && { LD_PRELOAD: LIBFAKETIME, FAKETIME: `${skewS > 0 ? '+' : ''}${skewS}s` }),
    });

    beforeAll(async () => {
      deployment = await privateDeployment();
      // One at a time: three starting at once on a loaded machine take longer than one after another.
      for (const skew of SKEWS_S) instances.push(await start(skew));
    }, 300_000);

    afterAll(async () => {
      for (const instance of started) await instance.stop();
      await deployment?.stop();
    });

    it('every number once, dated by the Redis clock, the sequence restarting at 1, no stall', async () => {
      // A whole minute 25 s or more away: registration and warm-up fit before it; the load ends 10 s after it at the earliest.
      const boundary = Math.ceil((Date.now() + 25_000) / 60_000) * 60_000;
      const zone = zoneWithMidnightAt(boundary);
      const key = 'bills';
      const secret = await register(instances[0].url, {
        key,
        format: FORMAT,
        timeZone: zone,
        maxSizePerSecond: 0,
        step: 200,
      });
      const before = dateIn(zone, boundary - 1);
      const after = dateIn(zone, boundary);
      expect(after).not.toBe(before);

      const answers: Answer[] = [];
      // Set once the restarted instance is up again and the boundary 10 s behind.
      let endAt = Infinity;
      const urls = instances.map((i) => i.url);
      const client = async (instance: number, id: number) => {
        let n = 0;
        while (Date.now() < endAt) {
          const count = 1 + ((id * 7 + n++) % 20);
          const sentAt = Date.now();
          try {
            const res = await call<{ ids: string[] }>(`${urls[instance]}/apps/${key}/ids`, {
              token: secret,
              body: { count },
            });
            answers.push({
              instance,
              client: id,
              sentAt,
              doneAt: Date.now(),
              status: res.status,
              numbers: res.status === 200 ? res.body.ids : [],
            });
          } catch {
            // The killed instance's connections: refused until it is back.
            await sleep(100);
          }
        }
      };
      const clients = instances.flatMap((_, i) => [0, 1, 2].map((c) => client(i, i * 10 + c)));
      // A direct consumer beside them: FCALL idpool_pop on the entity's ids list, as it pops plain ids.
      const k = numberKeys(key);
      const popErrors: string[] = [];
      const popper = async () => {
        let served = false;
        while (Date.now() < endAt) {
          const sentAt = Date.now();
          try {
            const numbers = (await deployment.direct.fcall('idpool_pop', 2, k.ids, k.epoch, 5)) as string[];
            answers.push({ instance: -1, client: 99, sentAt, doneAt: Date.now(), status: 200, numbers });
            served ||= numbers.length > 0;
          } catch (err) {
            // Before the entity's first refill its epoch marker is not written yet: documented, retried.
            if (served || !String(err).includes('IDPOOL_SERVER_CHANGED')) popErrors.push(String(err));
          }
          await sleep(20);
        }
      };
      clients.push(popper());

      // Before the boundary the next day's numbers already wait in Redis.
      await sleep(Math.max(0, boundary - 5_000 - Date.now()));
      const table = await deployment.direct.hgetall(k.periods);
      expect(table.p1).toBe(after);
      expect(await deployment.direct.llen(k.staged)).toBeGreaterThan(0);

      // Instance 2 killed 3 s before the boundary, started again across it.
      await sleep(Math.max(0, boundary - 3_000 - Date.now()));
      await instances[2].kill9();
      const restarted = await start(SKEWS_S[2]);
      instances[2] = restarted;
      urls[2] = restarted.url;
      endAt = Math.max(boundary + 10_000, Date.now() + 3_000);
      await Promise.all(clients);

      const all = answers.flatMap((a) => a.numbers);
      expect(new Set(all).size).toBe(all.length);
      expect(all.length).toBeGreaterThan(1000);
      const old = all.filter((n) => dateOf(n) === before);
      const fresh = all.filter((n) => dateOf(n) === after);
      expect(old.length + fresh.length).toBe(all.length);
      const lowest = (numbers: string[]) => numbers.reduce((low, n) => Math.min(low, seqOf(n)), Infinity);
      expect(lowest(old)).toBe(1);
      expect(lowest(fresh)).toBe(1);

      // Dated by the Redis clock: an answer that came back before the boundary holds the old day only, one sent after it the new day only.
      const margin = 50;
      for (const a of answers) {
        if (a.doneAt < boundary - margin) expect(a.numbers.every((n) => dateOf(n) === before)).toBe(true);
        if (a.sentAt > boundary + margin) expect(a.numbers.every((n) => dateOf(n) === after)).toBe(true);
      }
      // No old-day number after a new-day one, per client (each takes one request at a time), and each day in order.
      const byClient = new Map<number, Answer[]>();
      for (const a of answers) byClient.set(a.client, [...(byClient.get(a.client) ?? []), a]);
      for (const list of byClient.values()) {
        const numbers = list.flatMap((a) => a.numbers);
        const firstNew = numbers.findIndex((n) => dateOf(n) === after);
        if (firstNew >= 0) expect(numbers.slice(firstNew).every((n) => dateOf(n) === after)).toBe(true);
        for (const day of [before, after]) {
          const seqs = numbers.filter((n) => dateOf(n) === day).map(seqOf);
          expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        }
      }
      // The direct consumer: no refusal, and the new day's numbers within a second of the boundary (the
      // refillers wake at it and make the staged day the ids list).
      expect(popErrors).toEqual([]);
      const popped = answers.filter((a) => a.instance === -1 && a.numbers.length > 0);
      expect(popped.some((a) => a.doneAt < boundary - margin)).toBe(true);
      const firstFresh = popped.find((a) => a.numbers.some((n) => dateOf(n) === after));
      expect(firstFresh?.doneAt ?? Infinity).toBeLessThan(boundary + 1_000);
      // No stall: the instances that stayed up answered every take with numbers, across the boundary too.
      const refused = answers.filter((a) => a.instance >= 0 && a.instance !== 2 && a.status !== 200);
      expect(refused.map((a) => a.status)).toEqual([]);
      expect(answers.some((a) => a.instance === 2 && a.sentAt > boundary && a.status === 200)).toBe(true);
    }, 240_000);
  },
);
