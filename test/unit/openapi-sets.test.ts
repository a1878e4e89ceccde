import { expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi';
import { documentSet } from '../support/openapi-sets';
import baseline from './openapi-baseline.json';

// The baseline is what /openapi.json documented when responses were still
// written by hand: every route, status, header, parameter and field. The
// document generated from the zod schemas keeps all of it (it may add).
it('/openapi.json documents every route, status, parameter and field it did before', () => {
  const now = new Set(documentSet(openApiDocument()));
  expect(baseline.filter((line) => !now.has(line))).toEqual([]);
});
