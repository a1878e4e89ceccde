/**
 * Issue 35's proof without Redis: the embedded service (SQLite, real
 * processes) and the library, each across its zone's midnight and a
 * restart. The process clock decides; libfaketime moves each process's
 * clock so that a whole minute, made midnight by a fixed-offset zone, falls
 * a few seconds away. Every number once, dated by that clock, the new day's
 * sequence from 1; a restored database file repeats none (the high-water
 * file), and the per-second limit holds for numbers as for plain ids.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { openDatabase } from '../../src/db/database';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { describeWithServices } from '../support/describe-with-services';
import { call, register, takeIds } from '../support/http';
import { dateIn, zoneWithMidnightAt } from '../support/number-zones';
import { type Instance, LIBFAKETIME, alarmLines, startInstance, waitExit } from '../support/processes';
import { sleep } from '../support/wait';
import { LOCAL_PREFILL_LEAD_MS } from '../../src/pool/period-pools';

const FORMAT = 'E{yyyy}{MM}{dd}-{seq:7}';
const dateOf = (n: string) => n.slice(1, 9);
const seqOf = (n: string) => Number(n.slice(10));

/**
 * A clock shift for the processes under test: their clock reaches a whole
 * minute `leadMs` from now (this process's clock); `boundary` is that
 * minute on their clock, `realBoundary` when it comes on this one.
 */
function shiftedMidnight(leadMs: number) {
  const now = Date.now();
  const boundary = Math.ceil(now / 60_000) * 60_000 + 60_000;
  const shiftS = Math.round((boundary - now - leadMs) / 1000);
  return {
    boundary,
    realBoundary: boundary - shiftS * 1000,
    shiftMs: shiftS * 1000,
    zone: zoneWithMidnightAt(boundary),
    env: { LD_PRELOAD: LIBFAKETIME, FAKETIME: `+${shiftS}s` },
  };
}

/** Both days' numbers: none twice, each of one of the two days, the first day's from 1; resolves to the lowest sequence of the second. */
function twoDays(all: string[], before: string, after: string): number {
  expect(new Set(all).size).toBe(all.length);
  const old = all.filter((n) => dateOf(n) === before);
  const fresh = all.filter((n) => dateOf(n) === after);
  expect(old.length + fresh.length).toBe(all.length);
  expect(Math.min(...old.map(seqOf))).toBe(1);
  return Math.min(...fresh.map(seqOf));
}

describeWithServices('business numbers without Redis across midnight and a restart', { faketime: true }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-numbers-embedded-'));
  const running: Instance[] = [];
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(running.map((i) => i.stop()));
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('the embedded service: killed before midnight, started after it, under load; then its file restored', async () => {
    const file = join(dir, 'service.db');
    const shift = shiftedMidnight(14_000);
    const start = async () => {
      const instance = await startInstance({ IDPOOL_DATABASE_URL: `sqlite:${file}`, ...shift.env }, 60_000);
      running.push(instance);
      return instance;
    };
    let instance = await start();
    const secret = await register(instance.url, { key: 'bills', format: FORMAT, timeZone: shift.zone, step: 50 });
    const before = dateIn(shift.zone, shift.boundary - 1);
    const after = dateIn(shift.zone, shift.boundary);

    // The backup: taken while the day before has its first numbers.
    const first = (await takeIds(instance.url, 'bills', secret, 5)).body.ids;
    expect(first.map(seqOf)).toEqual([1, 2, 3, 4, 5]);
    expect(await instance.stop()).toBe(0);
    copyFileSync(file, join(dir, 'backup.db'));
    instance = await start();

    const answers: { sentAt: number; doneAt: number; client: number; instance: number; numbers: string[] }[] = [];
    // 1: the instance killed before midnight, 2: the one started after it.
    let generation = 1;
    let endAt = Infinity;
    const client = async (id: number) => {
      for (let n = 0; Date.now() < endAt; n++) {
        const sentAt = Date.now();
        const at = generation;
        try {
          const res = await call<{ ids: string[] }>(`${instance.url}/apps/bills/ids`, {
            token: secret,
            body: { count: 1 + ((id * 7 + n) % 20) },
          });
          if (res.status === 200)
            answers.push({ sentAt, doneAt: Date.now(), client: id, instance: at, numbers: res.body.ids });
          // Up to 50 takes a second each: load across the boundary without keeping a core busy for the file's length.
          await sleep(20);
        } catch {
          // The killed instance: refused until it is back.
          await sleep(50);
        }
      }
    };
    const clients = [0, 1, 2].map(client);
    await sleep(Math.max(0, shift.realBoundary - 3_000 - Date.now()));
    const killedAt = Date.now();
    await instance.kill9();
    generation = 2;
    instance = await start();
    endAt = Math.max(shift.realBoundary + 4_000, Date.now() + 2_000);
    await Promise.all(clients);

    const all = [...first, ...answers.flatMap((a) => a.numbers)];
    // The new day's counter starts at 1. The killed instance, alive in the last seconds before midnight, had its
    // refiller reserve the new day's first step (1-50) ahead (LOCAL_PREFILL_LEAD_MS): lost with it (a gap, never a
    // repeat), so the instance started after it begins at 51; killed before the lead, at 1. Killed just after the
    // lead began (a loaded machine), its reservation may not have run.
    const leadAt = shift.boundary - LOCAL_PREFILL_LEAD_MS;
    const lowestNew = twoDays(all, before, after);
    const killedOnItsClock = killedAt + shift.shiftMs;
    if (killedOnItsClock >= leadAt + 1_000) expect(lowestNew).toBe(51);
    else if (killedOnItsClock < leadAt) expect(lowestNew).toBe(1);
    else expect([1, 51]).toContain(lowestNew);
    expect(answers.some((a) => a.sentAt > shift.realBoundary && a.numbers.some((n) => dateOf(n) === after))).toBe(true);
    // Dated by the process clock: an answer's numbers are of a day its clock was in while the take ran.
    for (const a of answers) {
      const days = new Set([
        dateIn(shift.zone, a.sentAt + shift.shiftMs - 50),
        dateIn(shift.zone, a.doneAt + shift.shiftMs + 50),
      ]);
      for (const n of a.numbers) expect(days.has(dateOf(n)), `${n} taken ${a.sentAt}..${a.doneAt}`).toBe(true);
    }
    for (const id of [0, 1, 2]) {
      const numbers = answers.filter((a) => a.client === id).flatMap((a) => a.numbers);
      expect(numbers).toEqual([...numbers].sort());
    }

    // The restore: the file as it was before midnight; the high-water file says how far the new day went.
    expect(await instance.stop()).toBe(0);
    copyFileSync(join(dir, 'backup.db'), file);
    instance = await start();
    const restored: string[] = [];
    for (let i = 0; i < 10; i++) restored.push(...(await takeIds(instance.url, 'bills', secret, 20)).body.ids);
    expect(restored).toHaveLength(200);
    expect(restored.filter((n) => all.includes(n))).toEqual([]);
    expect(restored.every((n) => dateOf(n) === after)).toBe(true);
    expect(alarmLines(instance, 'database_behind').map((a) => a.entityKey)).toContain('bills');

    // The per-second limit holds for numbers too: a take over it is a 429 that hands out nothing, not even a gap.
    const limited = await register(instance.url, {
      key: 'slips',
      format: FORMAT,
      timeZone: shift.zone,
      maxSizePerTimes: 10,
      maxSizePerSecond: 10,
    });
    // Ten, then one more in the same wall-clock second (tried again should the two straddle a second's turn).
    const taken: string[] = [];
    let refused = 0;
    for (let round = 0; round < 5 && refused === 0; round++) {
      await sleep(1_000 - (Date.now() % 1_000));
      taken.push(...(await takeIds(instance.url, 'slips', limited, 10)).body.ids);
      const one = await takeIds(instance.url, 'slips', limited, 1);
      if (one.status === 429) refused++;
      else taken.push(...one.body.ids);
    }
    expect(refused).toBe(1);
    await sleep(1_000 - (Date.now() % 1_000));
    taken.push(...(await takeIds(instance.url, 'slips', limited, 1)).body.ids);
    // Nothing went with the 429: the numbers run on without a gap.
    expect(taken.map(seqOf)).toEqual(taken.map((_, i) => i + 1));
  }, 180_000);

  it('the library: a process across midnight (its sequence from 1), killed after it, another started', async () => {
    const file = join(dir, 'library.db');
    const db = await openDatabase(`sqlite:${file}`, { migrate: true });
    const shift = shiftedMidnight(10_000);
    try {
      await new EntityRegistry(new SqlEntityStore(db), systemClock).register({
        key: 'tickets',
        mode: 'monotonic',
        step: 20,
        format: FORMAT,
        timeZone: shift.zone,
      } as never);
    } finally {
      await db.close();
    }
    const takes: { before: number; after: number; numbers: string[] }[] = [];
    const run = async () => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(__dirname, 'fixtures', 'library-numbers.ts'), `sqlite:${file}`, 'tickets'],
        { env: { ...process.env, ...shift.env }, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      children.push(child);
      const lines = createInterface({ input: child.stdout });
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`library process exited with ${code}`)));
        lines.on('line', (line) => {
          if (line === 'ready') resolve();
          else takes.push(JSON.parse(line) as (typeof takes)[number]);
        });
      });
      return child;
    };
    let child = await run();
    await sleep(Math.max(0, shift.realBoundary + 2_000 - Date.now()));
    child.kill('SIGKILL');
    await waitExit(child);
    const killedAt = takes.length;
    child = await run();
    await sleep(2_000);
    child.kill('SIGKILL');
    await waitExit(child);

    const all = takes.flatMap((t) => t.numbers);
    const after = dateIn(shift.zone, shift.boundary);
    expect(twoDays(all, dateIn(shift.zone, shift.boundary - 1), after)).toBe(1);
    // The second process took the new day's numbers above the first's: a gap, never a repeat.
    const first = takes
      .slice(0, killedAt)
      .flatMap((t) => t.numbers)
      .filter((n) => dateOf(n) === after);
    const second = takes.slice(killedAt).flatMap((t) => t.numbers);
    expect(second.length).toBeGreaterThan(0);
    expect(second.every((n) => dateOf(n) === after)).toBe(true);
    expect(Math.min(...second.map(seqOf))).toBeGreaterThan(Math.max(...first.map(seqOf)));
    // Dated by the process clock (read around each take by the process itself).
    for (const t of takes) {
      const days = new Set([dateIn(shift.zone, t.before), dateIn(shift.zone, t.after)]);
      for (const n of t.numbers) expect(days.has(dateOf(n)), `${n} taken ${t.before}..${t.after}`).toBe(true);
    }
    expect(all).toEqual([...all].sort());
    expect(killedAt).toBeGreaterThan(0);
    expect(takes.length).toBeGreaterThan(killedAt);
  }, 120_000);
});
