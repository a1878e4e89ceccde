import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  profiles?: string[];
  user?: string;
  environment?: Record<string, string>;
  command?: string[];
  ports?: string[];
  volumes?: string[];
  tmpfs?: string[];
  read_only?: boolean;
  cap_drop?: string[];
  cap_add?: string[];
  security_opt?: string[];
  privileged?: boolean;
  mem_limit?: string;
  pids_limit?: number;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

// merge: compose reads YAML merge keys (`<<: *hardened`).
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = compose.services;
const DATA_STORES = ['mysql', 'redis', 'postgres'];
const IDPOOLS = ['idpool', 'idpool-postgres'];
/** Every secret the file reads from .env. */
const SECRETS = [
  'MYSQL_ROOT_PASSWORD',
  'MYSQL_PASSWORD',
  'REDIS_PASSWORD',
  'POSTGRES_PASSWORD',
  'IDPOOL_ADMIN_TOKEN',
  'IDPOOL_METRICS_TOKEN',
];

/** Bytes of a compose size (`512m`, `1g`). */
function bytes(size: string): number {
  const m = /^(\d+)([kmg])$/.exec(size);
  if (!m) throw new Error(`not a size: ${size}`);
  return Number(m[1]) * 1024 ** ' kmg'.indexOf(m[2]);
}

/** `${NAME:?message}`: compose refuses to start while NAME is unset or empty. */
const required = (value: string | undefined, name: string) =>
  new RegExp(`^\\$\\{${name}:\\?[^}]+\\}$`).test(value ?? '');

describe('docker-compose.yml is safe by default', () => {
  it('publishes no database port, and idpool only on 127.0.0.1 unless IDPOOL_BIND says otherwise', () => {
    for (const name of DATA_STORES) expect(services[name].ports, name).toBeUndefined();
    for (const name of IDPOOLS) expect(services[name].ports).toEqual(['${IDPOOL_BIND:-127.0.0.1}:8080:8080']);
  });

  it('requires passwords for MySQL and Redis and the admin token, with no default', () => {
    const mysql = services.mysql.environment!;
    expect(required(mysql.MYSQL_ROOT_PASSWORD, 'MYSQL_ROOT_PASSWORD')).toBe(true);
    expect(required(mysql.MYSQL_PASSWORD, 'MYSQL_PASSWORD')).toBe(true);
    expect(Object.keys(mysql)).not.toContain('MYSQL_ALLOW_EMPTY_PASSWORD');
    expect(Object.keys(mysql)).not.toContain('MYSQL_RANDOM_ROOT_PASSWORD');
    expect(required(services.redis.environment!.REDIS_PASSWORD, 'REDIS_PASSWORD')).toBe(true);
    expect(services.redis.command!.join('\n')).toMatch(/^requirepass \$\$REDIS_PASSWORD$/m);
    for (const name of IDPOOLS) {
      const env = services[name].environment!;
      expect(required(env.IDPOOL_ADMIN_TOKEN, 'IDPOOL_ADMIN_TOKEN'), name).toBe(true);
      expect(required(env.IDPOOL_METRICS_TOKEN, 'IDPOOL_METRICS_TOKEN'), name).toBe(true);
      expect(env.IDPOOL_REDIS_URL).toMatch(/^redis:\/\/:\$\{REDIS_PASSWORD:\?[^}]+\}@redis:6379\/0$/);
    }
    expect(services.idpool.environment!.IDPOOL_DATABASE_URL).toMatch(
      /^mysql:\/\/idpool:\$\{MYSQL_PASSWORD:\?[^}]+\}@mysql:3306\/idpool$/,
    );
    // No literal secret anywhere in the file.
    expect(read('docker-compose.yml')).not.toMatch(/change-me|password123|secret123/i);
  });

  it('reads every secret with ${NAME:?message}: never a default, never empty', () => {
    const text = read('docker-compose.yml');
    const uses = [...text.matchAll(/(?<!\$)\$\{([A-Z_]+)([^}]*)\}/g)].filter((m) => SECRETS.includes(m[1]));
    expect(new Set(uses.map((m) => m[1]))).toEqual(new Set(SECRETS));
    for (const [use, , tail] of uses) expect(tail, use).toMatch(/^:\?\S/);
  });

  it('hardens every container: read-only root, no capabilities, no privilege gain, memory and process limits', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.read_only, name).toBe(true);
      expect(s.cap_drop, name).toEqual(['ALL']);
      expect(s.cap_add, name).toBeUndefined();
      expect(s.privileged, name).toBeUndefined();
      expect(s.security_opt, name).toContain('no-new-privileges:true');
      expect(bytes(s.mem_limit ?? ''), name).toBeGreaterThanOrEqual(256 * 1024 ** 2);
      expect(bytes(s.mem_limit!), name).toBeLessThanOrEqual(4 * 1024 ** 3);
      expect(s.pids_limit, name).toBeGreaterThanOrEqual(32);
      expect(s.pids_limit, name).toBeLessThanOrEqual(1024);
    }
    // The data stores run as their images' own users (uid 999 owns the data
    // directories), so their entry points need no capability to switch users;
    // what they write outside their volume is on tmpfs.
    for (const name of DATA_STORES) expect(services[name].user, name).toBe('999:999');
    expect(services.mysql.tmpfs).toEqual(expect.arrayContaining(['/tmp', '/var/run/mysqld']));
    expect(services.postgres.tmpfs).toEqual(expect.arrayContaining(['/tmp', '/var/run/postgresql']));
    for (const name of IDPOOLS) expect(services[name].tmpfs, name).toEqual(['/tmp']);
    // A full Redis refuses writes (503 from idpool) before the kernel kills it.
    const maxmemory = /--maxmemory (\d+[kmg])b\b/.exec(services.redis.command!.join(' '))?.[1];
    expect(bytes(maxmemory ?? '')).toBeLessThan(bytes(services.redis.mem_limit!));
  });

  it('keeps data in named volumes, so down/up keeps current_offset', () => {
    const declared = Object.keys(compose.volumes);
    const mounts: Record<string, string> = {
      mysql: '/var/lib/mysql',
      redis: '/data',
      postgres: '/var/lib/postgresql/data',
    };
    for (const [name, path] of Object.entries(mounts)) {
      const volume = services[name].volumes!.find((v) => v.endsWith(`:${path}`));
      expect(volume, name).toBeDefined();
      const source = volume!.split(':')[0];
      expect(source.startsWith('.') || source.startsWith('/'), `${name} uses a bind mount`).toBe(false);
      expect(declared).toContain(source);
    }
  });

  it('runs Redis with maxmemory-policy noeviction and append-only persistence', () => {
    const command = services.redis.command!.join(' ');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(command).toContain('--appendonly yes');
  });

  it('puts no password in any argv: the shell commands run with stand-ins that record what they get', () => {
    const text = read('docker-compose.yml');
    // Compose substitutes ${VAR} and $VAR into the container's argv itself: secrets only as $$VAR (the container's shell reads them).
    for (const name of SECRETS) expect(text, name).not.toMatch(new RegExp(`(?<!\\$)\\$\\{?${name}(?![A-Z_])(?!:\\?)`));
    const dir = mkdtempSync(join(tmpdir(), 'idpool-compose-'));
    try {
      const bin = join(dir, 'bin');
      spawnSync('mkdir', [bin]);
      // Each stand-in records its arguments, its environment and its stdin, and answers as the real one would.
      for (const tool of ['redis-server', 'redis-cli', 'mysqladmin', 'pg_isready']) {
        const file = join(bin, tool);
        writeFileSync(
          file,
          `#!/bin/sh\nprintf '%s\\n' "$@" > "$RECORD/${tool}.argv"\nenv > "$RECORD/${tool}.env"\ncat > "$RECORD/${tool}.stdin"\necho PONG\n`,
        );
        chmodSync(file, 0o755);
      }
      const secrets = Object.fromEntries(SECRETS.map((name, i) => [name, `secret-${i}-${name.toLowerCase()}`]));
      /** Runs a compose command (`$$` is compose's escape for `$`) as the container would. */
      const run = (argv: string[]) => {
        const unescaped = argv.map((a) => a.replace(/\$\$/g, '$'));
        const [program, ...args] =
          unescaped[0] === 'CMD-SHELL'
            ? ['sh', '-c', unescaped[1]]
            : unescaped[0] === 'CMD'
              ? unescaped.slice(1)
              : unescaped;
        for (const arg of unescaped) for (const value of Object.values(secrets)) expect(arg).not.toContain(value);
        const done = spawnSync(program, args, {
          env: { PATH: `${bin}:/usr/bin:/bin`, RECORD: dir, ...secrets },
          input: '',
          encoding: 'utf8',
        });
        expect(done.status, done.stderr).toBe(0);
      };
      const recorded = (tool: string, what: 'argv' | 'env' | 'stdin') =>
        readFileSync(join(dir, `${tool}.${what}`), 'utf8');
      const noSecretIn = (value: string) => Object.values(secrets).every((secret) => !value.includes(secret));

      run(services.redis.command!);
      expect(noSecretIn(recorded('redis-server', 'argv'))).toBe(true);
      expect(recorded('redis-server', 'argv')).toMatch(/^-$/m);
      expect(recorded('redis-server', 'stdin')).toBe(`requirepass ${secrets.REDIS_PASSWORD}\n`);

      run(services.redis.healthcheck!.test);
      expect(noSecretIn(recorded('redis-cli', 'argv'))).toBe(true);
      expect(recorded('redis-cli', 'env')).toContain(`REDISCLI_AUTH=${secrets.REDIS_PASSWORD}\n`);

      run(services.mysql.healthcheck!.test);
      expect(noSecretIn(recorded('mysqladmin', 'argv'))).toBe(true);
      expect(recorded('mysqladmin', 'env')).toContain(`MYSQL_PWD=${secrets.MYSQL_ROOT_PASSWORD}\n`);

      run(services.postgres.healthcheck!.test);
      expect(noSecretIn(recorded('pg_isready', 'argv'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('health-checks every data store, and idpool waits for them to be healthy', () => {
    for (const name of DATA_STORES) expect(services[name].healthcheck?.test.length, name).toBeGreaterThan(0);
    expect(services.redis.healthcheck!.test.join(' ')).toContain('REDISCLI_AUTH');
    expect(services.idpool.depends_on).toEqual({
      mysql: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
    expect(services['idpool-postgres'].depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
  });

  it('offers PostgreSQL as a profile with its URL', () => {
    expect(services.postgres.profiles).toEqual(['postgres']);
    expect(services['idpool-postgres'].profiles).toEqual(['postgres']);
    expect(services['idpool-postgres'].environment!.IDPOOL_DATABASE_URL).toMatch(
      /^postgres:\/\/idpool:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/idpool$/,
    );
    for (const name of ['mysql', 'redis', 'idpool']) expect(services[name].profiles, name).toBeUndefined();
  });

  it('.env.example names every variable the file interpolates, with no value for secrets', () => {
    const example = read('.env.example');
    const used = new Set([...read('docker-compose.yml').matchAll(/(?<!\$)\$\{([A-Z_]+)/g)].map((m) => m[1]));
    for (const name of used) expect(example, name).toMatch(new RegExp(`^${name}=`, 'm'));
    for (const secret of [
      'MYSQL_ROOT_PASSWORD',
      'MYSQL_PASSWORD',
      'REDIS_PASSWORD',
      'IDPOOL_ADMIN_TOKEN',
      'IDPOOL_METRICS_TOKEN',
      'POSTGRES_PASSWORD',
    ]) {
      expect(example, secret).toMatch(new RegExp(`^${secret}=$`, 'm'));
    }
  });
});

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  const all = instructions(read('Dockerfile'));
  const stages: { op: string; args: string }[][] = [];
  for (const i of all) {
    if (i.op === 'FROM') stages.push([]);
    stages[stages.length - 1].push(i);
  }
  const runtime = stages[stages.length - 1];

  it('is multi-stage and the runtime stage installs no compiler', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0].some((i) => i.op === 'RUN' && i.args.includes('g++'))).toBe(true);
    expect(runtime.some((i) => i.op === 'RUN' && /apt-get|g\+\+|gcc|make|python/.test(i.args))).toBe(false);
    expect(runtime.some((i) => i.op === 'COPY' && i.args.startsWith('--from=build'))).toBe(true);
  });

  it('runs as a non-root user', () => {
    const users = runtime.filter((i) => i.op === 'USER');
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1].args).not.toMatch(/^(root|0)(:|$)/);
  });

  it('checks /healthz', () => {
    const health = runtime.find((i) => i.op === 'HEALTHCHECK');
    expect(health?.args).toMatch(/CMD .*\/healthz/);
  });

  it('keeps the SQLite data in a declared volume', () => {
    const volume = runtime.find((i) => i.op === 'VOLUME');
    expect(volume?.args).toContain('/data');
    expect(runtime.find((i) => i.op === 'ENV')?.args).toMatch(/IDPOOL_DATABASE_URL=sqlite:\/data\//);
  });
});
