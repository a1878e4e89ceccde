import { checkAnswer } from './answer-check';
import { uniqueKey } from './keys';

/** Small fetch wrappers for tests; every answer of idpool is checked against its route's schema (answer-check.ts). */
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface JsonResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export async function call<T = any>(
  url: string,
  init: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  } else if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const method = init.method ?? (body !== undefined ? 'POST' : 'GET');
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  checkAnswer(method, url, res.status, res.headers.get('content-type'), parsed);
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Registers an entity through the admin API; returns its secret. */
export async function register(baseUrl: string, entity: Record<string, unknown>): Promise<string> {
  const res = await call(`${baseUrl}/admin/apps`, { token: ADMIN_TOKEN, body: entity });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.secret;
}

/**
 * Registers an entity under a fresh key (`keyBase` with a random tail,
 * {@link uniqueKey}) with `fields`, without a per-second limit unless they
 * name one; returns the key and its secret.
 */
export async function registerNew(
  baseUrl: string,
  keyBase: string,
  fields: Record<string, unknown> = {},
): Promise<{ key: string; secret: string }> {
  const key = uniqueKey(keyBase);
  return { key, secret: await register(baseUrl, { key, maxSizePerSecond: 0, ...fields }) };
}

/** A small pool (a step of 100, at most 3,000 ids, 100 a take): refills run often under load. */
export const SMALL_POOL = { step: 100, maxPoolSize: 3000, maxSizePerTimes: 100 } as const;

/** The JSON body of every 4xx/5xx answer (src/http/errors.ts `sendError`). */
export interface ErrorAnswer {
  error: { code: string; message: string };
}

/** A take answer: ids on 200, `error` otherwise. */
export type TakeAnswer = { ids: string[] } & Partial<ErrorAnswer>;

type TakeResponse = Promise<JsonResponse<TakeAnswer>>;

export async function takeIds(baseUrl: string, key: string, secret: string, count = 1): TakeResponse {
  return call(`${baseUrl}/apps/${key}/ids`, { token: secret, body: { count } });
}

/**
 * {@link takeIds} as a client that honours `503` with `Retry-After` does:
 * asked again until ids come (10 s at most). For a first take right after a
 * registration, whose pool or list may still be filling on a loaded machine.
 */
export async function takeWhenReady(baseUrl: string, key: string, secret: string, count = 1): TakeResponse {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await takeIds(baseUrl, key, secret, count);
    if (res.status !== 503 || !res.headers.get('retry-after') || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Prometheus text into `name{labels}` → value (`+Inf` as Infinity). */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    const raw = line.slice(i + 1);
    out.set(line.slice(0, i), raw === '+Inf' ? Number.POSITIVE_INFINITY : Number(raw));
  }
  return out;
}
