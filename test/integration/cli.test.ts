import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BUILT_CLI, ensureBuilt } from '../support/build';
import { expectOneLineError, idpool, json } from '../support/cli';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, freePort, startInstance } from '../support/processes';
import { SQL_SERVERS, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const ROOT = join(__dirname, '..', '..');

describeWithServices('idpool CLI against a real instance (MariaDB + Redis)', { mysql: true, redis: true }, () => {
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let instance: Instance;
  let env: Record<string, string>;

  beforeAll(async () => {
    schema = await createTestSchema();
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv() });
    env = { IDPOOL_URL: instance.url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };
  });

  afterAll(async () => {
    await instance?.stop();
    await schema?.drop();
  });

  it('creates, lists, shows, updates, rotates the secret of and retires an entity', async () => {
    const key = uniqueKey('cli');

    // create (JSON): the secret works for taking ids.
    const created = json(
      await idpool(
        [
          'apps',
          'create',
          key,
          '--name',
          'CLI orders',
          '--step',
          '100',
          '--max-pool-size',
          '2000',
          '--max-size-per-second',
          '0',
          '--start-offset',
          '5000',
          '--json',
        ],
        env,
      ),
    );
    expect(created).toMatchObject({
      key,
      name: 'CLI orders',
      mode: 'monotonic',
      step: 100,
      maxPoolSize: 2000,
      startOffset: '5000',
    });
    const firstSecret: string = created.secret;
    const taken = await takeIds(instance.url, key, firstSecret, 3);
    expect(taken.status).toBe(200);
    expect(taken.body.ids[0]).toBe('5000');

    // take: the secret from IDPOOL_SECRET, or asked for on a terminal (script(1) gives the CLI one), never echoed.
    const cliTaken = await idpool(['take', key, '--count', '2'], { ...env, IDPOOL_SECRET: firstSecret });
    expect(cliTaken.code, cliTaken.stderr).toBe(0);
    expect(cliTaken.stdout).toBe('5003\n5004\n');
    const asked = await onTerminal(`${process.execPath} ${BUILT_CLI} take ${key}`, { ...env, IDPOOL_SECRET: '' }, [
      [`secret of ${key}: `, `${firstSecret}\r`],
    ]);
    expect(asked.code, asked.output).toBe(0);
    expect(asked.output).toMatch(new RegExp(`secret of ${key}: \\r?\\n5005\\r?\\n`));
    expect(asked.output).not.toContain(firstSecret);
    expectOneLineError(await idpool(['take', key], env), 2, /IDPOOL_SECRET is not set and there is no terminal/);
    expectOneLineError(
      await idpool(['take', key], { ...env, IDPOOL_SECRET: 'wrong' }),
      1,
      /unauthorized: .*\(check IDPOOL_SECRET\)/,
    );

    // create (text): the secret is printed once, with a warning.
    const trendKey = uniqueKey('cli_trend');
    const text = await idpool(
      [
        'apps',
        'create',
        trendKey,
        '--mode',
        'trend',
        '--step',
        '100',
        '--max-pool-size',
        '1000',
        '--max-size-per-second',
        '0',
      ],
      env,
    );
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^key\\s+${trendKey}$`, 'm'));
    expect(text.stdout).toMatch(/^mode\s+trend$/m);
    expect(text.stdout).toMatch(/^secret: [A-Za-z0-9_-]{43}$/m);
    expect(text.stdout).toContain('shown only now');

    // list
    const listed = json(await idpool(['apps', 'list', '--json'], env));
    expect(listed.apps.map((a: { key: string }) => a.key)).toEqual(expect.arrayContaining([key, trendKey]));
    // One page with --limit; every page by default (and the same keys either way).
    const first = json(await idpool(['apps', 'list', '--limit', '1', '--json'], env));
    expect(first.apps).toHaveLength(1);
    expect(first.next).toBe(first.apps[0].key);
    const second = json(await idpool(['apps', 'list', '--limit', '1', '--after', first.next, '--json'], env));
    expect(second.apps[0].key > first.next).toBe(true);
    const onePage = await idpool(['apps', 'list', '--limit', '1'], env);
    expect(onePage.stdout).toContain(`more after ${first.next} (add --after ${first.next})`);
    expectOneLineError(
      await idpool(['apps', 'list', '--limit', '0'], env),
      2,
      /limit must be an integer from 1 to 1000/,
    );
    const table = await idpool(['apps', 'list'], env);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^KEY\s+MODE\s+STEP\s+POOL\s+CURRENT OFFSET\s+PERIOD\s+NAME$/);
    expect(table.stdout).toMatch(
      new RegExp(`^${key}\\s+monotonic\\s+100\\s+\\d+/2000\\s+\\d+\\s+-\\s+CLI orders$`, 'm'),
    );

    // show
    const shown = await idpool(['apps', 'show', key], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^step\s+100$/m);
    expect(shown.stdout).toMatch(/^pool\.max\s+2000$/m);
    expect(shown.stdout).not.toContain(firstSecret);
    expect(json(await idpool(['apps', 'show', key, '--json'], env))).toMatchObject({
      key,
      step: 100,
      pool: { max: 2000 },
    });

    // update, and a refused update that changes nothing (exit 2, one line)
    const updated = json(await idpool(['apps', 'update', key, '--step', '200', '--name', 'Orders', '--json'], env));
    expect(updated).toMatchObject({ key, step: 200, name: 'Orders' });
    expectOneLineError(
      await idpool(['apps', 'update', key, '--step', '0'], env),
      2,
      /invalid_request: step: must be at least 1/,
    );
    expectOneLineError(await idpool(['apps', 'update', key, '--max-pool-size', '150'], env), 2, /maxPoolSize/);
    expectOneLineError(await idpool(['apps', 'update', key], env), 2, /nothing to change/);
    expect(json(await idpool(['apps', 'show', key, '--json'], env))).toMatchObject({
      step: 200,
      maxPoolSize: 2000,
      name: 'Orders',
    });

    // rotate-secret: the old secret stops working, the new one works
    const rotated = json(await idpool(['apps', 'rotate-secret', key, '--json'], env));
    expect(rotated.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated.secret).not.toBe(firstSecret);
    expect((await takeIds(instance.url, key, firstSecret, 1)).status).toBe(401);
    expect((await takeIds(instance.url, key, rotated.secret, 1)).status).toBe(200);

    // a second registration of the same key: the service says conflict (exit 1)
    expectOneLineError(await idpool(['apps', 'create', key], env), 1, /conflict: key .* is already registered/);

    // retire: needs --yes; afterwards the entity is gone
    expectOneLineError(await idpool(['apps', 'retire', key], env), 2, /cannot be undone; run again with --yes/);
    expect((await takeIds(instance.url, key, rotated.secret, 1)).status).toBe(200);
    const retired = await idpool(['apps', 'retire', key, '--yes'], env);
    expect(retired.code, retired.stderr).toBe(0);
    expect(retired.stdout).toBe(`retired ${key}\n`);
    expectOneLineError(await idpool(['apps', 'show', key], env), 1, /not_found: no entity with key/);
    expect((await takeIds(instance.url, key, rotated.secret, 1)).status).toBe(401);
    const after = json(await idpool(['apps', 'list', '--json'], env));
    expect(after.apps.map((a: { key: string }) => a.key)).not.toContain(key);
  });

  it('imports a JSON-lines file of entities: secrets to a 0600 file, a line per failure, exit 0/1/2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-import-'));
    try {
      const base = uniqueKey('imp');
      const good = Array.from({ length: 30 }, (_, i) => `${base}_${i}`);
      const taken = uniqueKey('imp_taken');
      expect(json(await idpool(['apps', 'create', taken, '--json'], env)).key).toBe(taken);
      const lines = [
        ...good.slice(0, 10).map((key) => JSON.stringify({ key, step: 10, maxPoolSize: 100, maxSizePerTimes: 50 })),
        '',
        '{"key": "broken",',
        JSON.stringify({ key: `${base}_bad`, step: 0 }),
        JSON.stringify({ key: taken }),
        '[1, 2]',
        ...good.slice(10).map((key) => JSON.stringify({ key, mode: 'snowflake' })),
      ];
      const file = join(dir, 'apps.jsonl');
      writeFileSync(file, `${lines.join('\n')}\n`);
      const secrets = join(dir, 'secrets.jsonl');

      const run = await idpool(['apps', 'import', file, '--secrets', secrets, '--concurrency', '4'], env);
      // A conflict is a run-time failure (1), as for `apps create`.
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).toBe(`registered 30 of 34 entities; secrets in ${secrets}\n`);
      // Failures are written as they come back (requests run concurrently), the summary last.
      const errors = run.stderr.trimEnd().split('\n');
      const summaryLine = errors.pop();
      errors.sort((a, b) => Number(/line (\d+)/.exec(a)![1]) - Number(/line (\d+)/.exec(b)![1]));
      expect([...errors, summaryLine]).toEqual([
        'idpool: line 12: not valid JSON',
        expect.stringMatching(/^idpool: line 13: invalid_request: step: must be at least 1$/),
        expect.stringMatching(/^idpool: line 14: conflict: key .* is already registered/),
        'idpool: line 15: not a JSON object like {"key": "orders"}',
        'idpool: 4 of 34 lines failed (listed above)',
      ]);
      expect(statSync(secrets).mode & 0o777).toBe(0o600);
      const written = readFileSync(secrets, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { key: string; secret: string });
      expect(written.map((w) => w.key).sort()).toEqual([...good].sort());
      const monotonic = written.find((w) => w.key === good[0])!;
      expect((await takeIds(instance.url, monotonic.key, monotonic.secret, 1)).status).toBe(200);
      const flake = written.find((w) => w.key === good[29])!;
      expect((await takeIds(instance.url, flake.key, flake.secret, 1)).status).toBe(200);

      // The secrets file is never overwritten: nothing is registered, exit 2.
      const fresh = uniqueKey('imp_fresh');
      writeFileSync(file, `${JSON.stringify({ key: fresh })}\n`);
      expectOneLineError(
        await idpool(['apps', 'import', file, '--secrets', secrets], env),
        2,
        /secrets.jsonl exists; secrets are never overwritten/,
      );
      expect((await call(`${instance.url}/admin/apps/${fresh}`, { token: ADMIN_TOKEN })).status).toBe(404);
      // Only invalid lines: exit 2. All good: exit 0 and --json.
      writeFileSync(file, `${JSON.stringify({ key: fresh, maxSizePerTimes: 0 })}\n`);
      const invalid = await idpool(['apps', 'import', file, '--secrets', join(dir, 's2')], env);
      expect(invalid.code).toBe(2);
      expect(invalid.stderr).toMatch(/^idpool: line 1: invalid_request: maxSizePerTimes/);
      writeFileSync(file, `${JSON.stringify({ key: fresh })}\n`);
      const ok = json(await idpool(['apps', 'import', file, '--secrets', join(dir, 's3'), '--json'], env));
      expect(ok).toEqual({ registered: 1, lines: 1, secrets: join(dir, 's3'), failures: [] });
      expectOneLineError(
        await idpool(['apps', 'import', join(dir, 'missing.jsonl'), '--secrets', join(dir, 's4')], env),
        2,
        /cannot read .*missing.jsonl: ENOENT/,
      );
      expectOneLineError(await idpool(['apps', 'import', file], env), 2, /required option '--secrets <path>'/);
      expectOneLineError(
        await idpool(['apps', 'import', file, '--secrets', join(dir, 's5'), '--url', 'http://127.0.0.1:1'], env),
        1,
        /cannot reach idpool/,
      );
      expect(existsSync(join(dir, 's5'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shows worker leases and decodes a snowflake id as the service does', async () => {
    const workers = json(await idpool(['workers', '--json'], env));
    const self = workers.workers.find((w: { self: boolean }) => w.self);
    expect(self).toMatchObject({ live: true });
    expect(typeof self.workerId).toBe('number');
    const text = await idpool(['workers'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^WORKER\s+LIVE\s+HEARTBEAT\s+RESERVED UNTIL\s+CODE$/);
    // The column ahead of the clock says why under the table.
    expect(text.stdout).toMatch(/^RESERVED UNTIL \(lastTimestamp\): the time its holder may issue ids up to/m);
    expect(text.stdout).toMatch(new RegExp(`^${self.workerId}\\s+yes\\s+.*\\(answering instance\\)$`, 'm'));
    expect(text.stdout).toMatch(/^\d+ live of \d+ worker ids$/m);

    const key = uniqueKey('cli_sf');
    const created = json(await idpool(['apps', 'create', key, '--mode', 'snowflake', '--json'], env));
    const res = await takeIds(instance.url, key, created.secret, 1);
    expect(res.status).toBe(200);
    const id: string = res.body.ids[0];
    const byService = await call(`${instance.url}/apps/${key}/ids/${id}`, { token: created.secret });
    expect(byService.status).toBe(200);

    const decoded = json(await idpool(['decode', id, '--json']));
    expect(decoded).toEqual(byService.body);
    expect(decoded.worker).toBe(self.workerId);
    expect(Math.abs(Date.parse(decoded.timestamp) - Date.now())).toBeLessThan(60_000);
    const decodedText = await idpool(['decode', id]);
    expect(decodedText.code).toBe(0);
    expect(decodedText.stdout).toMatch(new RegExp(`^worker\\s+${self.workerId}$`, 'm'));
    expect(decodedText.stdout).toMatch(/^layout\s+ms 41 \| worker 10 \| timeBack 1 \| sequence 11 \| reserved 0=0/m);

    // Another layout reads the same bits differently; a bad layout is a usage error.
    const otherLayout = json(await idpool(['decode', id, '--worker-bits', '8', '--json']));
    expect(otherLayout.worker).not.toBe(decoded.worker);
    expectOneLineError(
      await idpool(['decode', id, '--worker-bits', '11']),
      2,
      /IDPOOL_SNOWFLAKE_WORKER_BITS: must be an integer from 3 to 10/,
    );
    expectOneLineError(
      await idpool(['decode', 'not-an-id']),
      2,
      /"not-an-id" is not a snowflake id .*--format <template> \(and --time-zone <zone>, else UTC is assumed\)/,
    );
  });

  it("decodes an id's region with --region-bits, read from the id whatever IDPOOL_REGION says", async () => {
    // Made by hand in the documented layout with two region bits (docs/snowflake.md): ms 41 | region 2 |
    // worker 10 | timeBack 1 | sequence 9, so region at bit 20 and the timestamp at bit 22. One run of the
    // CLI (two seconds on a loaded machine): the text form is the other decode case's.
    const timestampMs = Date.now() - 60_000;
    const id = ((BigInt(timestampMs - Date.UTC(2024, 0, 1)) << 22n) | (2n << 20n) | (7n << 10n) | 9n).toString();
    const decoded = json(await idpool(['decode', id, '--region-bits', '2', '--json'], { IDPOOL_REGION: '1' }));
    expect(decoded).toEqual({
      id,
      timestamp: new Date(timestampMs).toISOString(),
      timestampMs,
      region: 2,
      worker: 7,
      timeBack: 0,
      sequence: 9,
      reserved: 0,
    });
  });

  it('creates a business-number entity and decodes its numbers as the service does', async () => {
    const key = uniqueKey('clinum');
    const format = 'SH{yyyy}{MM}{dd}{seq:5}';
    const created = json(
      await idpool(
        ['apps', 'create', key, '--format', format, '--reset', 'daily', '--time-zone', 'Asia/Shanghai', '--json'],
        env,
      ),
    );
    expect(created).toMatchObject({ format, reset: 'daily', timeZone: 'Asia/Shanghai' });
    const number = (await takeIds(instance.url, key, created.secret, 1)).body.ids[0];
    const byService = await call(`${instance.url}/apps/${key}/ids/${number}`, { token: created.secret });
    const decoded = json(
      await idpool(['decode', number, '--format', format, '--time-zone', 'Asia/Shanghai', '--json']),
    );
    expect(decoded).toEqual(byService.body);
    expect(decoded.seq).toBe('1');
    const segmentKey = uniqueKey('clidec');
    expect((await call(`${instance.url}/admin/apps`, { token: ADMIN_TOKEN, body: { key: segmentKey } })).status).toBe(
      201,
    );
    const closed = `http://127.0.0.1:${await freePort()}`;
    const [byApp, byLookup, noServer, unreachable, utc, segment, both] = await Promise.all([
      // The instance names the template and zone: no --format, no --time-zone.
      idpool(['decode', number, '--app', key, '--json'], env),
      idpool(['decode', number], env),
      // Nothing to ask: one line naming the flags.
      idpool(['decode', number]),
      idpool(['decode', number, '--url', closed], env),
      // A template without its zone: decoded, and the UTC said on stderr.
      idpool(['decode', number, '--format', format, '--json']),
      idpool(['decode', '5000', '--app', segmentKey], env),
      idpool(['decode', number, '--app', key, '--format', format], env),
    ]);
    expect(json(byApp)).toEqual(byService.body);
    expect(byLookup.code, byLookup.stderr).toBe(0);
    expect(byLookup.stdout).toMatch(new RegExp(`^entity\\s+${key}$`, 'm'));
    expect(byLookup.stdout).toMatch(/^timeZone\s+Asia\/Shanghai$/m);
    expect(byLookup.stdout).toMatch(new RegExp(`^period\\s+${byService.body.period}$`, 'm'));
    expectOneLineError(
      noServer,
      2,
      new RegExp(
        `^idpool: "${number}" is not a snowflake id .*--format <template> \\(and --time-zone <zone>.*--app <key>`,
      ),
    );
    expectOneLineError(
      unreachable,
      1,
      /cannot reach idpool at .*; to decode a business number give --format <template>/,
    );
    expect(utc.code, utc.stderr).toBe(0);
    expect(JSON.parse(utc.stdout)).toMatchObject({ timeZone: 'UTC', seq: '1' });
    expect(utc.stderr).toMatch(/^idpool: note: no --time-zone: the period \d{8} is read in UTC/);
    expectOneLineError(
      segment,
      2,
      new RegExp(`entity "${segmentKey}" issues monotonic segment ids: they carry nothing`),
    );
    expectOneLineError(both, 2, /--app and --format both name a template/);
    // `apps list` shows its period and the numbers used of it, not a number line's offset it does not draw from.
    const period = json(await idpool(['apps', 'list', '--json'], env)).apps.find(
      (a: { key: string }) => a.key === key,
    ).period;
    expect(period).toMatchObject({ id: number.slice(2, 10), used: '1', capacity: '99999' });
    const row = (await idpool(['apps', 'list'], env)).stdout.split('\n').find((l) => l.startsWith(`${key} `));
    // Its kind, no step or offset, its ready numbers against their cap (1 % of 99,999, or a largest batch of 1,000),
    // and its period's use with the zone that names it.
    expect(row).toMatch(
      new RegExp(`^${key}\\s+number/monotonic\\s+-\\s+\\d+/1000\\s+-\\s+${period.id} 1/99999 \\(Asia/Shanghai\\)\\s`),
    );
    const shown = await idpool(['apps', 'show', key], env);
    expect(shown.stdout).toMatch(/^period\.startLocal\s+\d{4}-\d\d-\d\d 00:00 \(Asia\/Shanghai\)$/m);
    expect(shown.stdout).toMatch(/^pool\.max\s+1000$/m);
    expect(shown.stdout).not.toMatch(/^currentOffset/m);
    expectOneLineError(await idpool(['decode', 'SH20261131' + '00001', '--format', format]), 2, /is not a number of/);
    expectOneLineError(
      await idpool(['decode', number, '--format', 'SH{ww}{seq:5}']),
      2,
      /^idpool: format: unknown token/,
    );
  });

  it('creates a gapless series; apps list shows what its ledger issued this period, decode reads its numbers', async () => {
    const key = uniqueKey('cligap');
    const created = json(
      await idpool(
        ['apps', 'create', key, '--format', 'GL{yyyy}-{seq:4}', '--time-zone', 'Europe/Paris', '--gapless', '--json'],
        env,
      ),
    );
    expect(created).toMatchObject({ key, format: 'GL{yyyy}-{seq:4}', gapless: true });
    const taken = await idpool(['take', key, '--count', '3', '--reference', 'inv-1'], {
      ...env,
      IDPOOL_SECRET: created.secret,
    });
    expect(taken.code, taken.stderr).toBe(0);
    const numbers = taken.stdout.trim().split('\n');
    expect(numbers).toHaveLength(3);
    const year = numbers[0].slice(2, 6);
    // Its kind, no pool (it keeps none), and its year's ledger counter with the zone: 3 issued, not 0.
    const row = (await idpool(['apps', 'list'], env)).stdout.split('\n').find((l) => l.startsWith(`${key} `));
    expect(row).toMatch(new RegExp(`^${key}\\s+number/gapless\\s+-\\s+-\\s+-\\s+${year} 3/9999 \\(Europe/Paris\\)\\s`));
    const decoded = json(await idpool(['decode', numbers[2], '--app', key, '--json'], env));
    expect(decoded).toMatchObject({ period: year, seq: '3', timeZone: 'Europe/Paris' });
    // A reference sent to an entity that keeps no ledger is refused, not dropped.
    const plain = uniqueKey('cliplain');
    const plainSecret = await register(instance.url, { key: plain });
    expectOneLineError(
      await idpool(['take', plain, '--reference', 'inv-2'], { ...env, IDPOOL_SECRET: plainSecret }),
      2,
      /^idpool: invalid_request: reference is kept only in a gapless series' ledger; entity ".*" is not gapless/,
    );
  });

  it('stops quietly, exit 0, when its reader closed early (idpool --help | head)', async () => {
    await ensureBuilt();
    const proc = spawn(process.execPath, [BUILT_CLI, '--help'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Closed before the CLI has even loaded: its first write meets a closed pipe (EPIPE), every time.
    proc.stdout.destroy();
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise<number | null>((resolve) => proc.once('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('answers bad usage with exit 2 and one line', async () => {
    const closed = await freePort();
    // Independent runs: started together to keep the test short.
    const cases: [string[], Record<string, string>, number, RegExp][] = [
      [[], {}, 2, /a command is missing/],
      [['apps'], {}, 2, /a command is missing/],
      [['apps', 'lst'], env, 2, /unknown command 'lst'.*list/],
      [['apps', 'create'], env, 2, /missing required argument 'key'/],
      [['apps', 'create', 'k', '--step', 'abc'], env, 2, /--step.*'abc' is invalid/],
      [['apps', 'create', 'k', '--mode', 'random'], env, 2, /--mode.*'random' is invalid.*monotonic, trend, snowflake/],
      [['apps', 'create', 'bad key!'], env, 2, /invalid_request: key: must be 1-64/],
      [['apps', 'list', '--bogus'], env, 2, /unknown option '--bogus'/],
      [['apps', 'list'], { IDPOOL_URL: instance.url }, 2, /IDPOOL_ADMIN_TOKEN is not set/],
      [['apps', 'list', '--url', 'localhost:8080'], env, 2, /--url must be an http/],
      // Runtime failures: exit 1.
      [
        ['apps', 'list'],
        { ...env, IDPOOL_ADMIN_TOKEN: 'wrong-token-0123456789' },
        1,
        /unauthorized: .*check IDPOOL_ADMIN_TOKEN/,
      ],
      [['workers', '--url', `http://127.0.0.1:${closed}`], env, 1, /cannot reach idpool at .*ECONNREFUSED/],
    ];
    const runs = await Promise.all(cases.map(([args, e]) => idpool(args, e)));
    cases.forEach(([args, , code, pattern], i) => {
      expect(args.join(' ') + ' → ' + runs[i].stderr).toMatch(pattern);
      expectOneLineError(runs[i], code, pattern);
    });

    const help = await idpool(['apps', 'create', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: idpool apps create [options] <key>');
    expect(help.stdout).toContain('--max-size-per-second <n>');
    const top = await idpool(['--help']);
    expect(top.code).toBe(0);
    for (const command of ['serve', 'migrate', 'apps', 'workers', 'decode'])
      expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(top.stdout).toContain('Exit codes: 0 ok, 1 runtime or dependency failure, 2 usage or validation error.');
  });

  it('migrates a SQLite file; refuses an unknown URL and reports an unreachable server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-cli-'));
    try {
      const sqlite = await idpool(['migrate', '--database-url', `sqlite:${join(dir, 'ids.db')}`]);
      expect(sqlite.code, sqlite.stderr).toBe(0);
      expect(sqlite.stdout).toMatch(/sqlite file .*ids\.db: applied /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expectOneLineError(
      await idpool(['migrate', '--database-url', 'oracle://x/y']),
      2,
      /invalid configuration: IDPOOL_DATABASE_URL/,
    );
    const closed = await freePort();
    expectOneLineError(
      await idpool(['migrate', '--database-url', `mysql://root@127.0.0.1:${closed}/x`]),
      1,
      /cannot open the database mysql 127\.0\.0\.1:\d+\/x \(--database-url\): connection refused/,
    );
    expectOneLineError(
      await idpool(['migrate', '--database-url', `postgres://postgres@127.0.0.1:${closed}/x`]),
      1,
      /cannot open the database postgres 127\.0\.0\.1:\d+\/x \(--database-url\): connection refused/,
    );
  });

  it('serves like npm start and stops cleanly on SIGTERM', async () => {
    const fresh = await createTestSchema();
    let proc: ChildProcess | undefined;
    try {
      await ensureBuilt();
      proc = spawn(process.execPath, [BUILT_CLI, 'serve', '--port', '0'], {
        cwd: ROOT,
        env: {
          ...process.env,
          IDPOOL_DATABASE_URL: fresh.url,
          ...sharedRedisEnv(),
          IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN,
          IDPOOL_PORT: '9',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      proc.stdout!.on('data', (d) => (out += String(d)));
      proc.stderr!.on('data', (d) => (out += String(d)));
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 30_000);
        proc!.stdout!.on('data', () => {
          const m = /"port":(\d+)[^\n]*"msg":"idpool listening"/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
      });
      expect(port).toBeGreaterThan(0);
      expect(port).not.toBe(9);
      const health = await call(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      const workers = json(
        await idpool(['workers', '--json'], {
          IDPOOL_URL: `http://127.0.0.1:${port}`,
          IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN,
        }),
      );
      expect(Array.isArray(workers.workers)).toBe(true);
      const exited = new Promise<number | null>((resolve) => proc!.once('exit', (code) => resolve(code)));
      proc.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (proc?.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await fresh.drop();
    }
  });
});

for (const { server, name } of SQL_SERVERS)
  describeWithServices(`idpool migrate on ${name}`, { [server]: true }, () => {
    it('migrates a fresh database and says when it is up to date', async () => {
      const fresh = await createTestSchema(server);
      try {
        const first = json(await idpool(['migrate', '--json'], { IDPOOL_DATABASE_URL: fresh.url }));
        expect(first.applied.length).toBeGreaterThanOrEqual(2);
        expect(first.applied.join(' ')).toMatch(/CreateApplication/);
        const again = await idpool(['migrate'], { IDPOOL_DATABASE_URL: fresh.url });
        expect(again.code, again.stderr).toBe(0);
        expect(again.stdout).toMatch(/schema is up to date/);
      } finally {
        await fresh.drop();
      }
    });
  });

/** Runs `command` on a terminal of its own (script(1)), answering each prompt once it is shown; resolves to all it printed. */
function onTerminal(
  command: string,
  env: Record<string, string>,
  answers: [prompt: string, answer: string][],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env } });
    let output = '';
    const pending = [...answers];
    proc.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      // Answered only once asked: typed earlier, the terminal would still be echoing.
      if (pending.length && output.includes(pending[0][0])) proc.stdin.write(pending.shift()![1]);
    });
    proc.once('error', reject);
    proc.once('close', (code) => resolve({ code, output }));
  });
}
