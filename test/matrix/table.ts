/**
 * What works with what: every kind of id through every door, the answer each
 * cell must give written down (issue 45). test/matrix/run.ts turns each cell
 * into a test case on each backend; docs/matrix.md is this table rendered
 * (test/unit/matrix-docs.test.ts fails when the two differ). A new kind or
 * door is not done until its row or column is filled here.
 */

/** The deployments the matrix runs on: one real process of the build each. */
export const BACKENDS = ['embedded', 'mariadb+redis', 'postgres+redis'] as const;
export type Backend = (typeof BACKENDS)[number];

/** The business-number template of the number rows (docs/numbers.md), daily in a zone that is not UTC. */
const NUMBER_FORMAT = 'INV{yyyy}{MM}{dd}-{seq:6}';
export const NUMBER_ZONE = 'Asia/Shanghai';

/** One row: a kind of id, and how such an entity is registered (`POST /admin/apps`). */
export interface Kind {
  readonly name: string;
  /** The registration's fields besides its key (every row is opted in to Leaf's routes). */
  readonly register: Readonly<Record<string, unknown>>;
  /** What its ids look like: decimal 64-bit strings, or numbers of {@link NUMBER_FORMAT}. */
  readonly shape: 'decimal' | 'number';
  /** Whether every id of the row must come in increasing order, whoever took it. */
  readonly ordered: boolean;
}

export const KINDS: readonly Kind[] = [
  { name: 'segment monotonic', register: { mode: 'monotonic' }, shape: 'decimal', ordered: true },
  { name: 'segment trend', register: { mode: 'trend' }, shape: 'decimal', ordered: false },
  { name: 'snowflake', register: { mode: 'snowflake' }, shape: 'decimal', ordered: false },
  {
    name: 'number monotonic',
    register: { mode: 'monotonic', format: NUMBER_FORMAT, timeZone: NUMBER_ZONE },
    shape: 'number',
    ordered: true,
  },
  {
    name: 'number trend',
    register: { mode: 'trend', format: NUMBER_FORMAT, timeZone: NUMBER_ZONE },
    shape: 'number',
    ordered: false,
  },
  /** A gapless series (docs/numbers.md "Gapless series"): issued at the take, each number in its ledger. */
  {
    name: 'gapless',
    register: { mode: 'monotonic', format: NUMBER_FORMAT, timeZone: NUMBER_ZONE, gapless: true },
    shape: 'number',
    ordered: true,
  },
];
export type KindName = (typeof KINDS)[number]['name'];

/** `count` ids (200) in the row's shape, none seen at any other door of the row. */
export interface Ids {
  readonly answer: 'ids';
  readonly count: number;
}
/** A documented refusal: its HTTP status and its code (the native `error.code`, Leaf's `Result`, Tinyid's `code N`, or `empty body`). */
export interface Refused {
  readonly answer: 'refused';
  readonly status: number;
  readonly code: string;
}
/** An answer that is not ids (an explanation, a list row, a dashboard row): what it must show. */
export interface Shown {
  readonly answer: 'shown';
  readonly what: string;
}
/** The door does not exist for this kind or backend: why, as checked against the deployment. */
export interface NotApplicable {
  readonly answer: 'n/a';
  readonly why: string;
}
export type Cell = Ids | Refused | Shown | NotApplicable;

const ids = (count: number): Ids => ({ answer: 'ids', count });
const refused = (status: number, code: string): Refused => ({ answer: 'refused', status, code });
const shown = (what: string): Shown => ({ answer: 'shown', what });
const na = (why: string): NotApplicable => ({ answer: 'n/a', why });

/** The answers a door gives per kind (the same on every backend unless `backend` says otherwise). */
type ByKind = Readonly<Record<KindName, Cell>>;

const all = (cell: Cell): ByKind => ({
  'segment monotonic': cell,
  'segment trend': cell,
  snowflake: cell,
  'number monotonic': cell,
  'number trend': cell,
  gapless: cell,
});

/** How one door is reached and what each kind gets there. */
export interface Door {
  readonly name: string;
  /** How a user reaches it, for the docs (Markdown). */
  readonly how: string;
  readonly cells: ByKind;
  /** A backend where the door does not exist for any kind. */
  readonly missingOn?: { readonly backends: readonly Backend[]; readonly why: string };
}

/** Leaf answers every failure with HTTP 500 and its `Result` code (docs/migrating.md#leafs-routes). */
const LEAF_NOT_SERVED = refused(500, 'Result{id=-2}');
/** Tinyid answers every failure with HTTP 200: code 6 in its JSON, an empty body on the simple routes. */
const TINYID_REFUSED = refused(200, 'code 6');
const TINYID_EMPTY = refused(200, 'empty body');
const CONFLICT = refused(409, 'conflict');
/**
 * A process leasing from its own segment cannot keep one global order, a
 * period's clock, or a snowflake's time. The leased doors take
 * {@link LEASED_IDS}: past one second's default limit (5,000), so `next()`
 * meets a 429 and must wait it out within its deadline.
 */
export const LEASED_IDS = 6000;
const CLIENT_LEASED: ByKind = {
  ...all(CONFLICT),
  'segment trend': ids(LEASED_IDS),
  gapless: refused(409, 'gapless_not_served_here'),
};
const NUMBERS_SHOWN = 'period, seq';
/** docs/numbers.md "Capacity and alarms": a number entity's list row and dashboard row show its period, not a number line. */
const NUMBERS_LISTED =
  'number/MODE, ready/cap (cap at most 1 % of the period), period used/capacity (zone); no step or offset';
const NUMBERS_DASHBOARD = 'period used/capacity, its zone, start labelled with the zone';
/** The same, its `used` the ledger's counter (ops/number-usage.ts), marked gapless; listed without a pool. */
const GAPLESS_DASHBOARD = `${NUMBERS_DASHBOARD}; gapless`;
export const GAPLESS_LISTED = 'number/gapless, no pool, period issued/capacity (zone); no step or offset';
/** Leaf's, Tinyid's and the lease routes cannot carry a key nor write a ledger (docs/numbers.md). */
const GAPLESS_NOT_SERVED = refused(409, 'gapless_not_served_here');
export const NO_LIST_WHY = 'a gapless series keeps no list: each number is issued at the take, in its ledger';
/** The reasons of the n/a cells: the door runs check each against the deployment (test/matrix/doors.ts). */
export const NO_REDIS_WHY = 'no Redis: the embedded pool is in process';
export const NO_POOL_WHY = 'snowflake ids are made at the take: no pool to pop';
/** What `idpool decode ID --app KEY` says of a segment entity's id (the route's 400, as the CLI's exit 2). */
export const CLI_SEGMENT_NOT_DECODED = 'exit 2: segment ids carry nothing to decode';
const NO_REDIS = { backends: ['embedded'] as const, why: NO_REDIS_WHY };
const NO_POOL = na(NO_POOL_WHY);
const SEGMENT_NOT_DECODED = refused(400, 'invalid_request');

export const DOORS: readonly Door[] = [
  { name: 'native single', how: '`POST /apps/:key/ids`', cells: all(ids(1)) },
  { name: 'native batch', how: '`POST /apps/:key/ids` `{"count":5}`', cells: all(ids(5)) },
  { name: 'native ?count', how: '`POST /apps/:key/ids?count=4`', cells: all(ids(4)) },
  { name: 'Idempotency-Key', how: 'a take of 3 with `Idempotency-Key`', cells: all(ids(3)) },
  {
    name: 'Idempotency-Key replay',
    how: 'the same key and body again',
    cells: all(shown('the same ids, Idempotent-Replayed: true')),
  },
  { name: 'Idempotency-Key conflict', how: 'the same key, another count', cells: all(CONFLICT) },
  {
    name: 'Leaf segment',
    how: '`/api/segment/get/:key` (`IDPOOL_COMPAT=leaf`)',
    cells: {
      ...all(LEAF_NOT_SERVED),
      'segment monotonic': ids(1),
      'segment trend': ids(1),
    },
  },
  {
    name: 'Leaf snowflake',
    how: '`/api/snowflake/get/:key`',
    cells: { ...all(LEAF_NOT_SERVED), snowflake: ids(1) },
  },
  {
    name: 'Tinyid nextId',
    how: '`/tinyid/id/nextId?batchSize=3` (`IDPOOL_COMPAT=tinyid`)',
    cells: {
      ...all(ids(3)),
      'number monotonic': TINYID_REFUSED,
      'number trend': TINYID_REFUSED,
      gapless: TINYID_REFUSED,
    },
  },
  {
    name: 'Tinyid nextIdSimple',
    how: '`/tinyid/id/nextIdSimple?batchSize=3`',
    cells: { ...all(ids(3)), 'number monotonic': TINYID_EMPTY, 'number trend': TINYID_EMPTY, gapless: TINYID_EMPTY },
  },
  {
    name: 'Tinyid nextSegmentId',
    how: '`/tinyid/id/nextSegmentId` (one step)',
    cells: { ...all(TINYID_REFUSED), 'segment trend': ids(1000) },
  },
  {
    name: 'Tinyid nextSegmentIdSimple',
    how: '`/tinyid/id/nextSegmentIdSimple` (one step)',
    cells: { ...all(TINYID_EMPTY), 'segment trend': ids(1000) },
  },
  {
    name: 'lease',
    how: '`POST /apps/:key/segments` `{"size":100}`',
    cells: { ...all(CONFLICT), 'segment trend': ids(100), gapless: GAPLESS_NOT_SERVED },
  },
  {
    name: 'decode',
    how: '`GET /apps/:key/ids/:id`',
    cells: {
      ...all(SEGMENT_NOT_DECODED),
      snowflake: shown('timestamp, worker, sequence'),
      'number monotonic': shown(NUMBERS_SHOWN),
      'number trend': shown(NUMBERS_SHOWN),
      gapless: shown(NUMBERS_SHOWN),
    },
  },
  { name: 'CLI take', how: '`idpool take KEY --count 2`', cells: all(ids(2)) },
  {
    name: 'CLI decode',
    how: "`idpool decode ID --app KEY` (a number's template and zone asked of the instance; a snowflake's layout local)",
    cells: {
      ...all(shown(CLI_SEGMENT_NOT_DECODED)),
      snowflake: shown('timestamp, worker, sequence'),
      'number monotonic': shown(NUMBERS_SHOWN),
      'number trend': shown(NUMBERS_SHOWN),
      gapless: shown(NUMBERS_SHOWN),
    },
  },
  { name: 'TypeScript client take', how: '`client.take(key, 5)` (`idpool/client`)', cells: all(ids(5)) },
  {
    name: 'TypeScript client leased',
    how: "`client.leased(key).nextAsync()` (`mode: 'trend', lease: {}`)",
    cells: CLIENT_LEASED,
  },
  {
    name: 'Java client take',
    how: '`client.take(key, 5)`, numbers `client.takeNumbers(key, 5)` (`clients/java`)',
    cells: all(ids(5)),
  },
  { name: 'Java client leased', how: '`client.leased(key).next()`', cells: CLIENT_LEASED },
  {
    name: 'Python client take',
    how: '`client.take(key, 5)`, numbers `client.take_numbers(key, 5)` (`clients/python`)',
    cells: all(ids(5)),
  },
  { name: 'Python client leased', how: '`client.leased(key).next()`', cells: CLIENT_LEASED },
  {
    name: 'Go client take',
    how: '`c.Take(ctx, key, 5)`, numbers `c.TakeNumbers(ctx, key, 5)` (`clients/go`)',
    cells: all(ids(5)),
  },
  { name: 'Go client leased', how: '`c.Leased(key).Next()`', cells: CLIENT_LEASED },
  {
    name: 'library service mode',
    how: '`createIdGenerator({ service })`: `take(key, 5)`, `numbers(key, 5)`',
    cells: {
      ...all(CONFLICT),
      'segment trend': ids(5),
      'number monotonic': ids(5),
      'number trend': ids(5),
      gapless: ids(5),
    },
  },
  {
    name: 'direct pop',
    how: '`LPOP idpool:{KEY}:ids` (a trusted consumer)',
    cells: { ...all(ids(1)), snowflake: NO_POOL, gapless: na(NO_LIST_WHY) },
    missingOn: NO_REDIS,
  },
  {
    name: 'guarded pop',
    how: '`FCALL idpool_pop 2 idpool:{KEY}:ids idpool:{KEY}:server 2`',
    cells: { ...all(ids(2)), snowflake: NO_POOL, gapless: na(NO_LIST_WHY) },
    missingOn: NO_REDIS,
  },
  {
    name: 'admin raise',
    how: '`POST /admin/apps/:key/raise` above the line, then a take',
    cells: {
      ...all(shown('200; the next id at or above firstId')),
      snowflake: refused(400, 'invalid_request'),
      'number monotonic': shown('200; the next number is seq + 1'),
      'number trend': shown('200; the next number is above seq'),
      // Its counter moves only with its ledger.
      gapless: CONFLICT,
    },
  },
  {
    name: 'admin raise below',
    how: '`POST /admin/apps/:key/raise` below the line',
    cells: { ...all(CONFLICT), snowflake: refused(400, 'invalid_request') },
  },
  {
    name: 'admin hold',
    how: '`POST /admin/apps/:key/hold`, then a take',
    cells: all(refused(503, 'entity_held')),
  },
  { name: 'admin release', how: '`POST /admin/apps/:key/release`, then a take', cells: all(ids(1)) },
  {
    name: 'apps list',
    how: '`idpool apps list`',
    cells: {
      'segment monotonic': shown('step, pool size/max, current offset'),
      'segment trend': shown('step, pool size/max, current offset'),
      snowflake: shown('mode only'),
      'number monotonic': shown(NUMBERS_LISTED),
      'number trend': shown(NUMBERS_LISTED),
      gapless: shown(GAPLESS_LISTED),
    },
  },
  {
    name: 'dashboard row',
    how: '`GET /admin/ops?q=KEY` (what `/admin/ui` renders)',
    cells: {
      'segment monotonic': shown('pool, current offset, take rate'),
      'segment trend': shown('pool, current offset, take rate'),
      snowflake: shown('take rate'),
      'number monotonic': shown(NUMBERS_DASHBOARD),
      'number trend': shown(NUMBERS_DASHBOARD),
      gapless: shown(GAPLESS_DASHBOARD),
    },
  },
  {
    name: 'admin retire',
    how: '`DELETE /admin/apps/:key`, then a take',
    cells: all(refused(401, 'unauthorized')),
  },
];

/** The answer a cell must give on `backend`. */
export function cellOf(door: Door, kind: KindName, backend: Backend): Cell {
  if (door.missingOn?.backends.includes(backend)) return na(door.missingOn.why);
  return door.cells[kind];
}

/** A cell as the docs print it. */
function cellText(cell: Cell): string {
  switch (cell.answer) {
    case 'ids':
      return cell.count === 1 ? '1 id' : `${cell.count} ids`;
    case 'refused':
      return `${cell.status} ${cell.code}`;
    case 'shown':
      return cell.what;
    case 'n/a':
      return `n/a: ${cell.why}`;
  }
}

const escapeCell = (text: string) => text.replace(/\|/g, '\\|');

/** The "What works with what" table of docs/matrix.md: one line a door, one column a kind. */
export function matrixMarkdown(): string {
  const header = `| door | how | ${KINDS.map((k) => k.name).join(' | ')} |`;
  const rule = `|${' --- |'.repeat(KINDS.length + 2)}`;
  const lines = DOORS.map((door) => {
    const cells = KINDS.map((k) => {
      const text = cellText(door.cells[k.name]);
      const missing = door.missingOn ? ` (${door.missingOn.backends.join(', ')}: n/a)` : '';
      return escapeCell(door.cells[k.name].answer === 'n/a' ? text : text + missing);
    });
    return `| ${door.name} | ${escapeCell(door.how)} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...lines].join('\n') + '\n';
}
