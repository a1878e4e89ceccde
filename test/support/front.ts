import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a front does with one request. */
export type FrontAction =
  /** `drop`: the instance answered, but the front cuts the client's connection instead of passing the answer on. */
  | { kind: 'forward'; holdMs?: number; drop?: boolean }
  | { kind: 'answer'; status: number; body: unknown; headers?: Record<string, string> };

export interface FrontRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  body: string;
  /** Status the front sent (or would have: the client may have gone). */
  status?: number;
  /** Body of the upstream answer, when forwarded. */
  upstreamBody?: string;
}

export interface Front {
  readonly url: string;
  readonly requests: FrontRequest[];
  close(): Promise<void>;
}

/**
 * A small HTTP front in front of a real instance: records every request,
 * and per request either forwards it (optionally holding the answer back,
 * to make a client time out, or dropping it, as a cut connection would) or
 * answers itself (to inject a 503).
 */
export async function startFront(
  target: string,
  decide: (req: FrontRequest, index: number) => FrontAction = () => ({ kind: 'forward' }),
): Promise<Front> {
  const requests: FrontRequest[] = [];
  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let data = '';
      req.on('data', (d) => (data += String(d)));
      req.on('end', () => resolve(data));
      req.on('error', reject);
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const seen: FrontRequest = {
        method: req.method!,
        path: req.url!,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        body,
      };
      const index = requests.push(seen) - 1;
      const action = decide(seen, index);
      try {
        if (action.kind === 'answer') {
          seen.status = action.status;
          res.writeHead(action.status, { 'content-type': 'application/json', ...action.headers });
          res.end(JSON.stringify(action.body));
          return;
        }
        const headers: Record<string, string> = {};
        for (const name of ['authorization', 'content-type', 'idempotency-key']) {
          const value = req.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        const upstream = await fetch(target + (req.url ?? ''), {
          method: req.method,
          headers,
          body: body || undefined,
        });
        const text = await upstream.text();
        seen.status = upstream.status;
        seen.upstreamBody = text;
        if (action.holdMs) await new Promise((r) => setTimeout(r, action.holdMs));
        if (action.drop) {
          res.socket?.destroy();
          return;
        }
        const out: Record<string, string> = { 'content-type': 'application/json' };
        for (const name of ['retry-after', 'idempotent-replayed']) {
          const value = upstream.headers.get(name);
          if (value !== null) out[name] = value;
        }
        if (!res.destroyed) {
          res.writeHead(upstream.status, out);
          res.end(text);
        }
      } catch (err) {
        if (!res.headersSent && !res.destroyed) {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 'bad_gateway', message: String(err) } }));
        }
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One take a front saw: the count it asked for, and its attempts. */
export interface TakeSeen {
  count: number;
  attempts: FrontRequest[];
}

/**
 * The takes a front saw, in order: one per Idempotency-Key, since every
 * attempt of one take carries the same key (the client retries an attempt
 * that timed out or was refused, as it may on a loaded machine). Throws if
 * two attempts of one take asked for different counts.
 */
export function takesSeen(front: Pick<Front, 'requests'>): TakeSeen[] {
  const takes = new Map<string, TakeSeen>();
  for (const [i, request] of front.requests.entries()) {
    const count = (JSON.parse(request.body) as { count: number }).count;
    const key = request.idempotencyKey ?? `#${i}`;
    const take = takes.get(key);
    if (!take) takes.set(key, { count, attempts: [request] });
    else if (take.count !== count)
      throw new Error(`one take (Idempotency-Key ${key}) asked for ${take.count}, then ${count}`);
    else take.attempts.push(request);
  }
  return [...takes.values()];
}
