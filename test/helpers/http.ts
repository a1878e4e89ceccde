/** Small fetch wrappers for tests. */
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface JsonResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export async function call<T = any>(url: string, init: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  } else if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method: init.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Registers an entity through the admin API; returns its secret. */
export async function register(baseUrl: string, app: Record<string, unknown>): Promise<string> {
  const res = await call(`${baseUrl}/admin/apps`, { token: ADMIN_TOKEN, body: app });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.secret;
}

export async function takeIds(baseUrl: string, key: string, secret: string, count = 1): Promise<JsonResponse<{ ids: string[] }>> {
  return call(`${baseUrl}/apps/${key}/ids`, { token: secret, body: { count } });
}
