import { BlockList, isIP } from 'node:net';
import { parseJson } from '../client/transport';
import { CliError, EXIT_FAILURE, EXIT_USAGE } from './errors';

export interface AdminApiOptions {
  url: string;
  token: string;
  /** What the token is, for the warning and a 401's hint (default: the admin token, IDPOOL_ADMIN_TOKEN). */
  credential?: { name: string; variable: string };
  timeoutMs: number;
  /** Told once, before any request, when the token is about to cross a network in clear text. */
  warn?: (message: string) => void;
}

export const entityPath = (key: string) => `/admin/apps/${encodeURIComponent(key)}`;

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether a URL's host is this machine by its spelling alone: a name resolving to loopback may change, so it is warned about. */
export function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const address = hostname.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The admin HTTP API as the CLI uses it: not the database, so one set of rules, caches told at once, no SQL access. */
export class AdminApi {
  private readonly base: string;

  constructor(private readonly options: AdminApiOptions) {
    const url = URL.parse(options.url);
    if (!url || !/^https?:\/\/[^/]/.test(options.url))
      throw new CliError(EXIT_USAGE, `--url must be an http:// or https:// URL, got "${options.url}"`);
    this.base = options.url.replace(/\/+$/, '');
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
      options.warn?.(
        `${options.credential?.name ?? 'the admin token'} goes to ${url.host} over plain http://, readable by anyone on the way; use an https:// URL (a TLS proxy in front of idpool)`,
      );
    }
  }

  readonly get = <T>(path: string) => this.send<T>('GET', path);
  readonly post = <T>(path: string, body?: unknown) => this.send<T>('POST', path, body);
  readonly patch = <T>(path: string, body: unknown) => this.send<T>('PATCH', path, body);
  readonly delete = (path: string) => this.send<undefined>('DELETE', path);

  private async send<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
        // A redirect would resend the token to wherever the answer points.
        redirect: 'manual',
      });
      text = await res.text();
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why =
        e.name === 'TimeoutError'
          ? `no answer within ${this.options.timeoutMs} ms`
          : (e.cause?.code ?? e.cause?.message ?? e.message);
      throw new CliError(EXIT_FAILURE, `cannot reach idpool at ${this.base}: ${why} (set --url or IDPOOL_URL)`, true);
    }
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      const target = location === null ? 'nowhere (no Location header)' : new URL(location, this.base + path).href;
      throw new CliError(
        EXIT_FAILURE,
        `idpool at ${this.base} answered ${res.status}, redirecting to ${target}; the CLI does not follow redirects (they would carry the admin token along): set --url or IDPOOL_URL to the address that answers`,
      );
    }
    const parsed = parseJson(text);
    if (res.ok) return parsed as T;
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    const code = error?.code ?? `http_${res.status}`;
    const message = error?.message ?? (text.slice(0, 200).replace(/\s+/g, ' ') || res.statusText);
    // The service rejected what was asked (bad field, bad value): a usage error.
    const exit = res.status === 400 || res.status === 413 ? EXIT_USAGE : EXIT_FAILURE;
    const hint = res.status === 401 ? ` (check ${this.options.credential?.variable ?? 'IDPOOL_ADMIN_TOKEN'})` : '';
    throw new CliError(exit, `${code}: ${message}${hint}`, false, error?.code);
  }
}
