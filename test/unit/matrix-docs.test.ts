/**
 * docs/matrix.md's "What works with what" is test/matrix/table.ts rendered:
 * the table the matrix tests run is the one the docs publish. When they
 * differ this fails with the difference; `IDPOOL_WRITE_MATRIX_DOC=1 npx
 * vitest run test/unit/matrix-docs.test.ts` writes the table into the page.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { matrixMarkdown } from '../matrix/table';

const PAGE = join(__dirname, '..', '..', 'docs', 'matrix.md');
const BEGIN = '<!-- matrix:begin (generated from test/matrix/table.ts) -->\n';
const END = '<!-- matrix:end -->';

it('docs/matrix.md holds the matrix table of test/matrix/table.ts', () => {
  const page = readFileSync(PAGE, 'utf8');
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  expect(begin, `${PAGE} has no ${BEGIN.trim()} … ${END} section`).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(begin);
  const published = page.slice(begin + BEGIN.length, end);
  if (process.env.IDPOOL_WRITE_MATRIX_DOC === '1' && published !== matrixMarkdown())
    writeFileSync(PAGE, page.slice(0, begin + BEGIN.length) + matrixMarkdown() + page.slice(end));
  else expect(published).toBe(matrixMarkdown());
});
