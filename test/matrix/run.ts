/**
 * The matrix on one backend (issue 45): every cell of test/matrix/table.ts a
 * test case, on one shared deployment (one process of the build, one entity
 * per kind); then, per row, every id its doors took unique (and in order
 * where the kind is monotonic). Doors run in the table's order, one after
 * another, each for every kind; the admin doors that change an entity come
 * last, retire the very last.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeWithServices } from '../support/describe-with-services';
import { BACKEND_NEEDS, type Deployment, type Row, startDeployment } from './deployment';
import { type Outcome, RUNS } from './doors';
import { DOORS, KINDS, type Backend, type Cell, type Kind, cellOf } from './table';

const SHAPES = {
  decimal: /^(0|[1-9]\d{0,18})$/,
  number: /^INV\d{8}-\d{6}$/,
} as const;

/** Asserts the door's outcome is the answer the cell wrote down. */
function expectCell(cell: Cell, outcome: Outcome, kind: Kind): void {
  switch (cell.answer) {
    case 'ids': {
      expect(outcome).toEqual({ ids: expect.any(Array) });
      const ids = (outcome as { ids: string[] }).ids;
      expect(ids).toHaveLength(cell.count);
      const misshapen = ids.filter(
        (id) => !SHAPES[kind.shape].test(id) || (kind.shape === 'decimal' && BigInt(id) >= 2n ** 63n),
      );
      expect(misshapen, `ids not of the ${kind.shape} shape`).toEqual([]);
      return;
    }
    case 'refused':
      expect(outcome).toEqual({ status: cell.status, code: cell.code });
      return;
    case 'shown':
      expect(outcome).toEqual({ shown: cell.what });
      return;
    case 'n/a':
      expect(outcome).toEqual({ na: cell.why });
  }
}

/** Ids of a kind compared in issue order: numbers of one template by their text (fixed width), others as integers. */
const increasing = (kind: Kind, a: string, b: string) => (kind.shape === 'number' ? a < b : BigInt(a) < BigInt(b));

function expectRowIds(row: Row): void {
  const seen = new Map<string, string>();
  const twice: string[] = [];
  for (const { door, ids } of row.taken)
    for (const id of ids) {
      const before = seen.get(id);
      if (before !== undefined) twice.push(`${id} (${before}, then ${door})`);
      seen.set(id, door);
    }
  expect(twice, 'ids handed out twice').toEqual([]);
  if (!row.kind.ordered) return;
  const all = row.taken.flatMap(({ door, ids }) => ids.map((id) => ({ door, id })));
  const backwards = all.flatMap((x, i) =>
    i > 0 && !increasing(row.kind, all[i - 1].id, x.id)
      ? [`${all[i - 1].id} (${all[i - 1].door}) then ${x.id} (${x.door})`]
      : [],
  );
  expect(backwards, 'ids out of order').toEqual([]);
}

/** The whole matrix on `backend`: one describe per door, one test per kind, then the rows' ids. */
export function matrixOn(backend: Backend): void {
  describeWithServices(`the matrix on ${backend}`, { ...BACKEND_NEEDS[backend], clientToolchains: true }, () => {
    let d: Deployment;

    beforeAll(async () => {
      d = await startDeployment(backend);
    });

    afterAll(async () => {
      await d?.stop();
    });

    describe.each(DOORS.map((door) => [door.name, door] as const))('%s', (_name, door) => {
      it.each(KINDS.map((kind) => [kind.name, kind] as const))('%s', async (_kind, kind) => {
        const run = RUNS[door.name];
        expect(run, `no run for the door ${door.name} (test/matrix/doors.ts)`).toBeDefined();
        const row = d.rows.get(kind.name)!;
        expectCell(cellOf(door, kind.name, backend), await run(d, row), kind);
      });
    });

    it.each(KINDS.map((kind) => [kind.name, kind] as const))(
      '%s: every id its doors took is unique (and in order where monotonic)',
      (_name, kind) => {
        expectRowIds(d.rows.get(kind.name)!);
      },
    );
  });
}
