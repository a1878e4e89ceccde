/**
 * How the matrix reaches each door (test/matrix/table.ts names them), and
 * what it saw there, as an {@link Outcome} the table's cell is compared
 * with. Every HTTP call is cut after 5 s (a cell waiting longer fails); ids
 * a door took are added to the row's list as they come, for the row's
 * uniqueness and order check.
 */
import { IdpoolClient, IdpoolHttpError } from '../../src/client';
import { createIdGenerator } from '../../src/index';
import { idpool } from '../support/cli';
import { sleep } from '../support/wait';
import type { Deployment, Row } from './deployment';
import { type Driver, type DriverAnswer, matrixDrivers, runDriver } from './drivers';
import {
  CLI_SEGMENT_NOT_DECODED,
  GAPLESS_LISTED,
  LEASED_IDS,
  NO_LIST_WHY,
  NUMBER_ZONE,
  NO_POOL_WHY,
  NO_REDIS_WHY,
} from './table';

/** What a door answered: ids, a refusal (status and code), something else it showed, or that it is not there. */
export type Outcome = { ids: string[] } | { status: number; code: string } | { shown: string } | { na: string };

/** A door's run for one row of one deployment. */
type Run = (d: Deployment, row: Row) => Promise<Outcome>;

/** A cell waits at most this long for an answer (issue 45). */
const CELL_WAIT_MS = 5000;

interface HttpAnswer {
  status: number;
  text: string;
  headers: Headers;
}

async function http(
  url: string,
  init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(CELL_WAIT_MS),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const record = (row: Row, door: string, ids: string[]) => row.taken.push({ door, ids });

/** A native answer: its ids (recorded for the row), or its status and `error.code`. */
function nativeOutcome(row: Row, door: string, a: HttpAnswer): Outcome {
  let body: { ids?: string[]; error?: { code?: string } };
  try {
    body = JSON.parse(a.text) as typeof body;
  } catch {
    return { shown: `${a.status}, not JSON: ${a.text.slice(0, 80)}` };
  }
  if (a.status === 200 && Array.isArray(body.ids)) {
    record(row, door, body.ids);
    return { ids: body.ids };
  }
  return { status: a.status, code: body.error?.code ?? `(no error code) ${a.text.slice(0, 80)}` };
}

const takeUrl = (d: Deployment, row: Row) => `${d.url}/apps/${row.key}/ids`;
const nativeTake = async (d: Deployment, row: Row, door: string, count = 1) =>
  nativeOutcome(row, door, await http(takeUrl(d, row), { token: row.secret, body: { count } }));

/** A take of `count` with the row's one `Idempotency-Key`. */
const keyedTake = (d: Deployment, row: Row, count: number) =>
  http(takeUrl(d, row), { token: row.secret, body: { count }, headers: { 'idempotency-key': `mx-${row.key}` } });

/** A take as a client that honours 503 with Retry-After makes it, within the cell's wait (a pool refilling after a hold). */
async function takeWhenReady(d: Deployment, row: Row, door: string): Promise<Outcome> {
  const deadline = Date.now() + CELL_WAIT_MS;
  for (;;) {
    const a = await http(takeUrl(d, row), { token: row.secret, body: { count: 1 } });
    if (a.status !== 503 || !a.headers.get('retry-after') || Date.now() > deadline) return nativeOutcome(row, door, a);
    await sleep(100);
  }
}

const lastId = (row: Row): string => {
  const last = row.taken.at(-1)?.ids.at(-1);
  if (last === undefined) throw new Error(`${row.kind.name}: no id taken yet`);
  return last;
};

/** The ids `(current, max]` stepping by `delta` of a Tinyid segment or a native lease (first..last). */
function spaced(first: bigint, last: bigint, delta: bigint): string[] {
  const out: string[] = [];
  for (let id = first; id <= last; id += delta) out.push(id.toString());
  return out;
}

/** Leaf's answer: the id as text, or its HTTP 500 and `Result{id=…}`. */
async function leaf(d: Deployment, row: Row, family: 'segment' | 'snowflake'): Promise<Outcome> {
  const a = await http(`${d.url}/api/${family}/get/${row.key}`);
  if (a.status === 200 && /^\d+$/.test(a.text)) {
    record(row, `Leaf ${family}`, [a.text]);
    return { ids: [a.text] };
  }
  const result = /Result\{id=(-?\d+)/.exec(a.text);
  return result
    ? { status: a.status, code: `Result{id=${result[1]}}` }
    : { shown: `${a.status} ${a.text.slice(0, 80)}` };
}

const tinyidUrl = (d: Deployment, row: Row, route: string, batch?: number) =>
  `${d.url}/tinyid/id/${route}?bizType=${row.key}&token=${encodeURIComponent(row.secret)}${batch ? `&batchSize=${batch}` : ''}`;

/** Tinyid's JSON routes: must be JSON; ids read from the raw text (they are Longs there, past 2^53 in JSON numbers). */
async function tinyidJson(d: Deployment, row: Row, route: 'nextId' | 'nextSegmentId'): Promise<Outcome> {
  const a = await http(tinyidUrl(d, row, route, route === 'nextId' ? 3 : undefined));
  let body: { code?: number };
  try {
    body = JSON.parse(a.text) as typeof body;
  } catch {
    return { shown: `${a.status}, not JSON: ${a.text.slice(0, 80)}` };
  }
  if (body.code !== 200) return { status: a.status, code: `code ${String(body.code)}` };
  const door = `Tinyid ${route}`;
  if (route === 'nextId') {
    const ids = (/"data":\[([^\]]*)\]/.exec(a.text)?.[1] ?? '').split(',').filter((w) => w !== '');
    record(row, door, ids);
    return { ids };
  }
  const field = (name: string) => BigInt(new RegExp(`"${name}":(\\d+)`).exec(a.text)?.[1] ?? '-1');
  const ids = spaced(field('currentId') + field('delta'), field('maxId'), field('delta'));
  record(row, door, ids);
  return { ids };
}

/** Tinyid's simple routes: `3` or `4,5,6`, a segment as `currentId,loadingId,maxId,delta,remainder`, or an empty body. */
async function tinyidSimple(d: Deployment, row: Row, route: 'nextIdSimple' | 'nextSegmentIdSimple'): Promise<Outcome> {
  const a = await http(tinyidUrl(d, row, route, route === 'nextIdSimple' ? 3 : undefined));
  if (a.text === '') return { status: a.status, code: 'empty body' };
  if (!/^\d+(,\d+)*$/.test(a.text)) return { shown: `${a.status} ${a.text.slice(0, 80)}` };
  const words = a.text.split(',');
  const ids =
    route === 'nextIdSimple' ? words : spaced(BigInt(words[0]) + BigInt(words[3]), BigInt(words[2]), BigInt(words[3]));
  record(row, `Tinyid ${route}`, ids);
  return { ids };
}

/** An error of the TypeScript client or the library as an outcome: the service's refusal, or what was thrown. */
function thrown(err: unknown): Outcome {
  if (err instanceof IdpoolHttpError) return { status: err.status, code: err.code };
  return { shown: `threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}` };
}

/** Ends the rate window a leased door filled (6,000 ids of a 5,000 a second entity) before the next door takes. */
const afterLeases = () => sleep(1100);

async function tsLeased(d: Deployment, row: Row): Promise<Outcome> {
  const client = new IdpoolClient({
    endpoints: [d.url],
    deadlineMs: CELL_WAIT_MS,
    entities: { [row.key]: { secret: row.secret, mode: 'trend', lease: { waitMs: CELL_WAIT_MS } } },
  });
  try {
    const leased = client.leased(row.key);
    const ids: string[] = [];
    for (let i = 0; i < LEASED_IDS; i++) ids.push(String(await leased.nextAsync()));
    record(row, 'TypeScript client leased', ids);
    return { ids };
  } catch (err) {
    return thrown(err);
  } finally {
    client.close();
    if (row.kind.name === 'segment trend') await afterLeases();
  }
}

async function tsTake(d: Deployment, row: Row): Promise<Outcome> {
  const client = new IdpoolClient({
    endpoints: [d.url],
    deadlineMs: CELL_WAIT_MS,
    entities: { [row.key]: { secret: row.secret } },
  });
  try {
    const ids = await client.take(row.key, 5);
    record(row, 'TypeScript client take', ids);
    return { ids };
  } catch (err) {
    return thrown(err);
  } finally {
    client.close();
  }
}

async function libraryService(d: Deployment, row: Row): Promise<Outcome> {
  const ids = await createIdGenerator({ service: { url: [d.url], secrets: { [row.key]: row.secret } } });
  try {
    const taken =
      row.kind.shape === 'number' ? await ids.numbers(row.key, 5) : (await ids.take(row.key, 5)).map(String);
    record(row, 'library service mode', taken);
    return { ids: taken };
  } catch (err) {
    return thrown(err);
  } finally {
    await ids.close();
    if (row.kind.name === 'segment trend') await afterLeases();
  }
}

/** One run of each language's driver per deployment, over every row (the trend row last: its leases fill a rate window). */
const driverRuns = new WeakMap<Deployment, Map<string, Promise<Map<string, Map<string, DriverAnswer>>>>>();

function driverRun(d: Deployment, language: Driver['language']) {
  let runs = driverRuns.get(d);
  if (!runs) driverRuns.set(d, (runs = new Map()));
  let run = runs.get(language);
  if (!run) {
    run = (async () => {
      const driver = (await matrixDrivers()).find((x) => x.language === language)!;
      const rows = [...d.rows.values()].sort(
        (a, b) => Number(a.kind.name === 'segment trend') - Number(b.kind.name === 'segment trend'),
      );
      const secrets = Object.fromEntries(rows.map((r) => [r.key, r.secret]));
      const numbers = rows.filter((r) => r.kind.shape === 'number').map((r) => r.key);
      const answers = await runDriver(driver, d.url, secrets, numbers, { take: 5, leased: LEASED_IDS });
      // Recorded as the run took them: each row's take, then its leased ids.
      for (const row of rows)
        for (const door of ['take', 'leased']) {
          const a = answers.get(row.key)?.get(door);
          if (a && 'ids' in a) record(row, `${language} client ${door}`, a.ids);
        }
      await afterLeases();
      return answers;
    })();
    runs.set(language, run);
  }
  return run;
}

const driverDoor =
  (language: Driver['language'], door: 'take' | 'leased'): Run =>
  async (d, row) => {
    const a = (await driverRun(d, language)).get(row.key)?.get(door);
    if (!a) return { shown: `the ${language} driver printed nothing for ${door}` };
    if ('error' in a) return { shown: `threw ${a.error}` };
    return a;
  };

/** A direct consumer's pop of the row's pool, asked again while it is empty (a refill on its way) within the cell's wait. */
async function pop(d: Deployment, row: Row, guarded: boolean): Promise<Outcome> {
  if (!d.redis) return { na: NO_REDIS_WHY };
  const { client, keys } = d.redis;
  const k = keys(row.key);
  // A gapless series issued numbers at every door before: had it a list, it would exist by now.
  if (row.kind.register.gapless === true)
    return (await client.exists(k.ids)) === 0 ? { na: NO_LIST_WHY } : { shown: 'a list of ready numbers' };
  if (row.kind.register.mode === 'snowflake') {
    const popped = await client.lpop(k.ids);
    return popped === null ? { na: NO_POOL_WHY } : { shown: `popped ${popped}` };
  }
  const deadline = Date.now() + CELL_WAIT_MS;
  for (;;) {
    const ids = guarded
      ? ((await client.fcall('idpool_pop', 2, k.ids, k.epoch, 2)) as string[])
      : [await client.lpop(k.ids)].filter((x): x is string => x !== null);
    if (ids.length > 0) {
      record(row, guarded ? 'guarded pop' : 'direct pop', ids);
      return { ids };
    }
    if (Date.now() > deadline) return { shown: 'nothing to pop' };
    await sleep(100);
  }
}

/** The period and sequence of a business number of the matrix's template (NUMBER_FORMAT in table.ts). */
const numberParts = (n: string) => ({ period: n.slice(3, 11), seq: BigInt(n.slice(12)) });

async function raise(d: Deployment, row: Row, below: boolean): Promise<Outcome> {
  const url = `${d.url}/admin/apps/${row.key}/raise`;
  if (row.kind.shape === 'number') {
    const { period, seq } = numberParts(lastId(row));
    const to = below ? 1n : seq + 1000n;
    const a = await http(url, { token: d.admin, body: { period, seq: to.toString() } });
    if (a.status !== 200 || below) return refusalOf(a);
    const next = await takeWhenReady(d, row, 'admin raise');
    if (!('ids' in next)) return next;
    const got = numberParts(next.ids[0]).seq;
    if (row.kind.ordered)
      return {
        shown: got === to + 1n ? '200; the next number is seq + 1' : `200; the next seq is ${got}, raised to ${to}`,
      };
    return { shown: got > to ? '200; the next number is above seq' : `200; the next seq ${got} is not above ${to}` };
  }
  const firstId = below
    ? 1n
    : row.taken.flatMap((t) => t.ids).reduce((m, id) => (BigInt(id) > m ? BigInt(id) : m), 0n) + 1_000_000n;
  const a = await http(url, { token: d.admin, body: { firstId: firstId.toString() } });
  if (a.status !== 200 || below) return refusalOf(a);
  const next = await takeWhenReady(d, row, 'admin raise');
  if (!('ids' in next)) return next;
  return {
    shown:
      BigInt(next.ids[0]) >= firstId
        ? '200; the next id at or above firstId'
        : `200; the next id ${next.ids[0]} is below ${firstId}`,
  };
}

/** A non-ids native answer: its status and `error.code` (a 200 where a refusal was due shows as 200 `ok`). */
function refusalOf(a: HttpAnswer): Outcome {
  try {
    const body = JSON.parse(a.text) as { error?: { code?: string } };
    return { status: a.status, code: body.error?.code ?? 'ok' };
  } catch {
    return { status: a.status, code: `(not JSON) ${a.text.slice(0, 80)}` };
  }
}

/** Summarises a decode answer (the route's or the CLI's JSON): which parts it explains. */
function explained(row: Row, id: string, body: Record<string, unknown>): string {
  if (row.kind.shape === 'number') {
    const { period, seq } = numberParts(id);
    return body.period === period && String(body.seq) === seq.toString()
      ? 'period, seq'
      : `explained as ${JSON.stringify(body)}`;
  }
  return ['timestamp', 'worker', 'sequence'].every((f) => f in body)
    ? 'timestamp, worker, sequence'
    : `explained as ${JSON.stringify(body)}`;
}

async function decode(d: Deployment, row: Row): Promise<Outcome> {
  const id = lastId(row);
  const a = await http(`${d.url}/apps/${row.key}/ids/${encodeURIComponent(id)}`, { token: row.secret });
  if (a.status !== 200) return refusalOf(a);
  return { shown: explained(row, id, JSON.parse(a.text) as Record<string, unknown>) };
}

/**
 * A door run by a CLI process per row: the rows' processes start together at
 * the door's first cell (a process start is most of their time), and each
 * cell waits for all of them, so the next door starts after the last.
 */
function perRowProcesses(run: Run): Run {
  const started = new WeakMap<Deployment, Map<Row, Promise<Outcome>>>();
  return async (d, row) => {
    let runs = started.get(d);
    if (!runs) started.set(d, (runs = new Map([...d.rows.values()].map((r) => [r, run(d, r)]))));
    await Promise.allSettled(runs.values());
    return runs.get(row)!;
  };
}

/** `idpool decode ID --app KEY`: no --format nor --time-zone, the instance names a number's. */
async function cliDecode(d: Deployment, row: Row): Promise<Outcome> {
  const id = lastId(row);
  const run = await idpool(['decode', id, '--app', row.key, '--url', d.url, '--json'], { IDPOOL_ADMIN_TOKEN: d.admin });
  if (run.code === 2 && run.stderr.includes('segment ids: they carry nothing to decode'))
    return { shown: CLI_SEGMENT_NOT_DECODED };
  if (run.code !== 0) return { shown: `exit ${run.code}: ${run.stderr.trim()}` };
  return { shown: explained(row, id, JSON.parse(run.stdout) as Record<string, unknown>) };
}

async function cliTake(d: Deployment, row: Row): Promise<Outcome> {
  const run = await idpool(['take', row.key, '--count', '2', '--url', d.url], { IDPOOL_SECRET: row.secret });
  if (run.code !== 0) return { shown: `exit ${run.code}: ${run.stderr.trim()}` };
  const ids = run.stdout.trim().split('\n');
  record(row, 'CLI take', ids);
  return { ids };
}

/** `idpool apps list` once per deployment: each key's columns. */
const lists = new WeakMap<Deployment, Promise<Map<string, Record<string, string>>>>();

function appsList(d: Deployment) {
  let list = lists.get(d);
  if (!list) {
    list = (async () => {
      const run = await idpool(['apps', 'list', '--url', d.url], { IDPOOL_ADMIN_TOKEN: d.admin });
      if (run.code !== 0) throw new Error(`idpool apps list: exit ${run.code}: ${run.stderr}`);
      const [header, ...lines] = run.stdout.trimEnd().split('\n');
      // Columns are padded and two spaces apart; the PERIOD cell holds one space.
      const names = header.split(/\s{2,}/);
      return new Map(
        lines.map((line) => {
          const cells = line.split(/\s{2,}/);
          return [cells[0], Object.fromEntries(names.map((n, i) => [n, cells[i] ?? '']))];
        }),
      );
    })();
    lists.set(d, list);
  }
  return list;
}

async function listed(d: Deployment, row: Row): Promise<Outcome> {
  const c = (await appsList(d)).get(row.key);
  if (!c) return { shown: 'not listed' };
  const none = (name: string) => c[name] === '-';
  const segmentFields = `step ${c.STEP}, pool ${c.POOL}, offset ${c['CURRENT OFFSET']}`;
  if (!none('PERIOD') && c.MODE === 'number/gapless') {
    const ok =
      new RegExp(`^\\d{8} \\d+/999999 \\(${NUMBER_ZONE}\\)$`).test(c.PERIOD) &&
      Number(/ (\d+)\//.exec(c.PERIOD)?.[1]) > 0 &&
      none('POOL') &&
      none('STEP') &&
      none('CURRENT OFFSET');
    return { shown: ok ? GAPLESS_LISTED : `mode ${c.MODE}, pool ${c.POOL}, period ${c.PERIOD}; ${segmentFields}` };
  }
  if (!none('PERIOD')) {
    const cap = /^\d+\/(\d+)$/.exec(c.POOL)?.[1];
    const ok =
      c.MODE === `number/${String(row.kind.register.mode)}` &&
      cap !== undefined &&
      Number(cap) <= 9999 &&
      new RegExp(`^\\d{8} \\d+/999999 \\(${NUMBER_ZONE}\\)$`).test(c.PERIOD) &&
      none('STEP') &&
      none('CURRENT OFFSET');
    return {
      shown: ok
        ? 'number/MODE, ready/cap (cap at most 1 % of the period), period used/capacity (zone); no step or offset'
        : `mode ${c.MODE}, period ${c.PERIOD}; ${segmentFields}`,
    };
  }
  if (none('STEP') && none('POOL') && none('CURRENT OFFSET')) return { shown: 'mode only' };
  const segment = /^\d+$/.test(c.STEP) && /^\d+\/\d+$/.test(c.POOL) && /^\d+$/.test(c['CURRENT OFFSET']);
  return { shown: segment ? 'step, pool size/max, current offset' : segmentFields };
}

interface DashboardRow {
  mode: string;
  takePerSecond?: number;
  pool?: unknown;
  currentOffset?: string;
  sampledAt?: number | null;
  period?: { used: string; capacity: string; timeZone: string; startLocal?: string };
  gapless?: boolean;
}

/** The row the dashboard renders for the entity, once sampled (within the cell's wait). */
async function dashboard(d: Deployment, row: Row): Promise<Outcome> {
  const deadline = Date.now() + CELL_WAIT_MS;
  let r: DashboardRow | undefined;
  for (;;) {
    const a = await http(`${d.url}/admin/ops?q=${row.key}`, { token: d.admin });
    if (a.status !== 200) return refusalOf(a);
    const body = JSON.parse(a.text) as { entities: (DashboardRow & { key: string })[] };
    r = body.entities.find((e) => e.key === row.key);
    if (r?.mode === 'snowflake' || (r?.sampledAt ?? null) !== null || Date.now() > deadline) break;
    await sleep(200);
  }
  if (!r) return { shown: 'no row' };
  if (r.mode === 'snowflake')
    return { shown: typeof r.takePerSecond === 'number' && !r.pool ? 'take rate' : JSON.stringify(r) };
  if (r.period) {
    const p = r.period;
    // What dashboard.js renders for a number row: the period's use against its capacity, its zone, its start in that zone.
    const ok =
      p.capacity === '999999' &&
      p.timeZone === NUMBER_ZONE &&
      Number(p.used) > 0 &&
      p.startLocal?.endsWith(`(${NUMBER_ZONE})`) === true;
    return {
      shown: ok
        ? `period used/capacity, its zone, start labelled with the zone${r.gapless === true ? '; gapless' : ''}`
        : `period ${p.used}/${p.capacity} ${p.timeZone}, start ${p.startLocal}`,
    };
  }
  const segment = r.pool !== undefined && typeof r.currentOffset === 'string' && typeof r.takePerSecond === 'number';
  return { shown: segment ? 'pool, current offset, take rate' : `no period: ${JSON.stringify(r).slice(0, 120)}` };
}

/** An admin change, then a take: the take's answer (or the change's refusal). */
const adminThenTake =
  (path: string, method: string, door: string, body?: unknown, ok = 200): Run =>
  async (d, row) => {
    const a = await http(`${d.url}/admin/apps/${row.key}${path}`, { method, token: d.admin, body });
    if (a.status !== ok) return refusalOf(a);
    return path === '/release' ? takeWhenReady(d, row, door) : nativeTake(d, row, door);
  };

/** Each door of the table by name, and how the matrix reaches it. */
export const RUNS: Readonly<Record<string, Run>> = {
  'native single': async (d, row) =>
    nativeOutcome(row, 'native single', await http(takeUrl(d, row), { method: 'POST', token: row.secret })),
  'native batch': (d, row) => nativeTake(d, row, 'native batch', 5),
  'native ?count': async (d, row) =>
    nativeOutcome(
      row,
      'native ?count',
      await http(`${takeUrl(d, row)}?count=4`, { method: 'POST', token: row.secret }),
    ),
  'Idempotency-Key': async (d, row) => nativeOutcome(row, 'Idempotency-Key', await keyedTake(d, row, 3)),
  'Idempotency-Key replay': async (d, row) => {
    const first = row.taken.find((t) => t.door === 'Idempotency-Key')?.ids;
    const a = await keyedTake(d, row, 3);
    if (a.status !== 200) return refusalOf(a);
    const ids = (JSON.parse(a.text) as { ids: string[] }).ids;
    const same = first !== undefined && JSON.stringify(ids) === JSON.stringify(first);
    const replayed = a.headers.get('idempotent-replayed') === 'true';
    if (!same) record(row, 'Idempotency-Key replay', ids);
    return {
      shown:
        same && replayed
          ? 'the same ids, Idempotent-Replayed: true'
          : `ids ${ids.join(',')} (first ${first?.join(',')}), replayed ${replayed}`,
    };
  },
  'Idempotency-Key conflict': async (d, row) =>
    nativeOutcome(row, 'Idempotency-Key conflict', await keyedTake(d, row, 2)),
  'Leaf segment': (d, row) => leaf(d, row, 'segment'),
  'Leaf snowflake': (d, row) => leaf(d, row, 'snowflake'),
  'Tinyid nextId': (d, row) => tinyidJson(d, row, 'nextId'),
  'Tinyid nextIdSimple': (d, row) => tinyidSimple(d, row, 'nextIdSimple'),
  'Tinyid nextSegmentId': (d, row) => tinyidJson(d, row, 'nextSegmentId'),
  'Tinyid nextSegmentIdSimple': (d, row) => tinyidSimple(d, row, 'nextSegmentIdSimple'),
  lease: async (d, row) => {
    const a = await http(`${d.url}/apps/${row.key}/segments`, { token: row.secret, body: { size: 100 } });
    if (a.status !== 200) return refusalOf(a);
    const l = JSON.parse(a.text) as { first: string; last: string; delta: number };
    const ids = spaced(BigInt(l.first), BigInt(l.last), BigInt(l.delta));
    record(row, 'lease', ids);
    return { ids };
  },
  decode,
  'CLI take': perRowProcesses(cliTake),
  'CLI decode': perRowProcesses(cliDecode),
  'TypeScript client take': tsTake,
  'TypeScript client leased': tsLeased,
  'Java client take': driverDoor('java', 'take'),
  'Java client leased': driverDoor('java', 'leased'),
  'Python client take': driverDoor('python', 'take'),
  'Python client leased': driverDoor('python', 'leased'),
  'Go client take': driverDoor('go', 'take'),
  'Go client leased': driverDoor('go', 'leased'),
  'library service mode': libraryService,
  'direct pop': (d, row) => pop(d, row, false),
  'guarded pop': (d, row) => pop(d, row, true),
  'admin raise': (d, row) => raise(d, row, false),
  'admin raise below': (d, row) => raise(d, row, true),
  'admin hold': adminThenTake('/hold', 'POST', 'admin hold', { reason: 'matrix' }),
  'admin release': adminThenTake('/release', 'POST', 'admin release'),
  'apps list': listed,
  'dashboard row': dashboard,
  'admin retire': adminThenTake('', 'DELETE', 'admin retire', undefined, 204),
};
