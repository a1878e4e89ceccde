import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, idpool } from '../support/cli';
import { freePort } from '../support/processes';

const TOKEN = 'cli-token-safety-0123456789abcdef0123456789';

interface Seen {
  method: string;
  url: string;
  authorization?: string;
}

/** An HTTP server on loopback that records each request and answers with `answer`. */
async function recordingServer(
  answer: (req: IncomingMessage) => { status: number; headers?: Record<string, string>; body?: string },
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization });
    const a = answer(req);
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(a.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/**
 * The CLI and the admin token: it never follows a redirect (a
 * redirect would resend the token to wherever it points), and it warns
 * before sending the token over plain http:// to a host that is not
 * loopback by its spelling.
 */
describe('idpool CLI keeps the admin token where --url points', () => {
  let elsewhere: Awaited<ReturnType<typeof recordingServer>>;
  let redirecting: Awaited<ReturnType<typeof recordingServer>>;

  beforeAll(async () => {
    elsewhere = await recordingServer(() => ({ status: 200, body: '{"apps":[],"next":null}' }));
    redirecting = await recordingServer((req) =>
      req.url!.startsWith('/relative')
        ? { status: 307, headers: { location: '/moved/admin/apps' } }
        : req.url!.startsWith('/bare')
          ? { status: 302 }
          : { status: req.method === 'POST' ? 307 : 302, headers: { location: `${elsewhere.url}/admin/apps` } },
    );
  });

  afterAll(async () => {
    for (const s of [elsewhere, redirecting]) await new Promise((r) => s?.server.close(r));
  });

  it('refuses a redirect, naming where it points, and sends nothing there', async () => {
    const env = { IDPOOL_ADMIN_TOKEN: TOKEN };
    const list = await idpool(['apps', 'list', '--url', redirecting.url], env);
    expectOneLineError(
      list,
      1,
      new RegExp(`answered 302, redirecting to ${elsewhere.url}/admin/apps; the CLI does not follow redirects`),
    );
    const create = await idpool(['apps', 'create', 'orders', '--url', redirecting.url], env);
    expectOneLineError(create, 1, new RegExp(`answered 307, redirecting to ${elsewhere.url}/admin/apps`));
    // A relative Location is named as the absolute URL it means.
    const relative = await idpool(['apps', 'show', 'orders', '--url', `${redirecting.url}/relative`], env);
    expectOneLineError(relative, 1, new RegExp(`answered 307, redirecting to ${redirecting.url}/moved/admin/apps`));
    expectOneLineError(
      await idpool(['workers', '--url', `${redirecting.url}/bare`], env),
      1,
      /answered 302, redirecting to nowhere \(no Location header\)/,
    );

    expect(elsewhere.seen).toEqual([]);
    // Each command asked exactly once, with the token, of the server it was given.
    expect(redirecting.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /admin/apps?limit=1000',
      'POST /admin/apps',
      'GET /relative/admin/apps/orders',
      'GET /bare/admin/workers',
    ]);
    expect(redirecting.seen.every((s) => s.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('warns before sending the token over http:// to a host that is not loopback, then tries', async () => {
    const env = { IDPOOL_ADMIN_TOKEN: TOKEN };
    // `.invalid` never resolves (RFC 6761): the warning depends on the URL alone, and comes before the connection error.
    const run = await idpool(['apps', 'list', '--url', 'http://localhost.invalid:8080', '--timeout', '10000'], env);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      'idpool: warning: the admin token goes to localhost.invalid:8080 over plain http://, readable by anyone on the way; use an https:// URL (a TLS proxy in front of idpool)',
    );
    expect(lines[1]).toMatch(/^idpool: cannot reach idpool at http:\/\/localhost.invalid:8080: /);

    // IDPOOL_URL is judged the same way.
    const fromEnv = await idpool(['workers', '--timeout', '10000'], {
      ...env,
      IDPOOL_URL: 'http://10.255.255.1.invalid:8080',
    });
    expect(fromEnv.stderr.split('\n')[0]).toMatch(
      /^idpool: warning: the admin token goes to 10\.255\.255\.1\.invalid:8080 over plain http:\/\//,
    );
  });

  it('does not warn for loopback addresses, localhost, or https://', async () => {
    const env = { IDPOOL_ADMIN_TOKEN: TOKEN };
    const closed = await freePort();
    const urls = [
      `http://127.0.0.1:${closed}`,
      `http://127.3.2.1:${closed}`,
      `http://localhost:${closed}`,
      `http://[::1]:${closed}`,
      'https://localhost.invalid:8443',
    ];
    const runs = await Promise.all(
      urls.map((url) => idpool(['apps', 'list', '--url', url, '--timeout', '10000'], env)),
    );
    runs.forEach((run) => expectOneLineError(run, 1, /cannot reach idpool at/));
    expect(runs.map((r) => r.stderr).join('')).not.toContain('warning');
    // Served from loopback: no warning, and the answer as usual.
    const ok = await idpool(['apps', 'list', '--url', elsewhere.url, '--json'], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toBe('');
    expect(JSON.parse(ok.stdout)).toEqual({ apps: [] });
  });
});
