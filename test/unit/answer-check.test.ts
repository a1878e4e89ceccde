import { expect, it } from 'vitest';
import { checkAnswer } from '../support/answer-check';

const JSON_TYPE = 'application/json; charset=utf-8';
const base = 'http://127.0.0.1:1';

it('passes an answer that fits its route schema, and URLs of no documented route', () => {
  expect(() =>
    checkAnswer('POST', `${base}/apps/orders/ids?count=2`, 200, JSON_TYPE, { ids: ['1', '2'] }),
  ).not.toThrow();
  expect(() => checkAnswer('GET', `${base}/healthz`, 200, JSON_TYPE, { status: 'ok' })).not.toThrow();
  expect(() =>
    checkAnswer('POST', `${base}/apps/orders/ids`, 503, JSON_TYPE, { error: { code: 'pool_exhausted', message: 'm' } }),
  ).not.toThrow();
  expect(() => checkAnswer('GET', `${base}/api/segment/get/orders`, 200, JSON_TYPE, { anything: 1 })).not.toThrow();
  expect(() => checkAnswer('GET', `${base}/metrics`, 200, 'text/plain; version=0.0.4', 'idpool_up 1')).not.toThrow();
});

it('fails an answer its schema refuses, or a status its route does not document', () => {
  expect(() => checkAnswer('POST', `${base}/apps/orders/ids`, 200, JSON_TYPE, { ids: [1, 2] })).toThrow(
    /POST \/apps\/\{key\}\/ids 200: the answer does not match/,
  );
  expect(() => checkAnswer('GET', `${base}/healthz`, 200, JSON_TYPE, { status: 'ok', extra: true })).toThrow(
    /does not match/,
  );
  expect(() =>
    checkAnswer('POST', `${base}/apps/orders/ids`, 503, JSON_TYPE, { error: { code: 'no_such_code', message: 'm' } }),
  ).toThrow(/does not match/);
  expect(() => checkAnswer('GET', `${base}/healthz`, 500, JSON_TYPE, {})).toThrow(/not documented/);
});
