import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  profiles?: string[];
  environment?: Record<string, string>;
  command?: string[];
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const DATA_STORES = ['mysql', 'redis', 'postgres'];
const IDPOOLS = ['idpool', 'idpool-postgres'];

/** `${NAME:?message}`: compose refuses to start while NAME is unset or empty. */
const required = (value: string | undefined, name: string) => new RegExp(`^\\$\\{${name}:\\?[^}]+\\}$`).test(value ?? '');

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
    expect(services.redis.command!.join(' ')).toMatch(/--requirepass "\$\$REDIS_PASSWORD"/);
    for (const name of IDPOOLS) {
      const env = services[name].environment!;
      expect(required(env.IDPOOL_ADMIN_TOKEN, 'IDPOOL_ADMIN_TOKEN'), name).toBe(true);
      expect(env.IDPOOL_REDIS_URL).toBe('redis://:${REDIS_PASSWORD}@redis:6379/0');
    }
    expect(services.idpool.environment!.IDPOOL_DATABASE_URL).toBe('mysql://idpool:${MYSQL_PASSWORD}@mysql:3306/idpool');
    // No literal secret anywhere in the file.
    expect(read('docker-compose.yml')).not.toMatch(/change-me|password123|secret123/i);
  });

  it('keeps data in named volumes, so down/up keeps current_offset', () => {
    const declared = Object.keys(compose.volumes);
    const mounts: Record<string, string> = { mysql: '/var/lib/mysql', redis: '/data', postgres: '/var/lib/postgresql/data' };
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

  it('health-checks every data store, and idpool waits for them to be healthy', () => {
    for (const name of DATA_STORES) expect(services[name].healthcheck?.test.length, name).toBeGreaterThan(0);
    expect(services.redis.healthcheck!.test.join(' ')).toContain('REDISCLI_AUTH');
    expect(services.idpool.depends_on).toEqual({ mysql: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
    expect(services['idpool-postgres'].depends_on).toEqual({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
  });

  it('offers PostgreSQL as a profile with its URL', () => {
    expect(services.postgres.profiles).toEqual(['postgres']);
    expect(services['idpool-postgres'].profiles).toEqual(['postgres']);
    expect(services['idpool-postgres'].environment!.IDPOOL_DATABASE_URL).toMatch(/^postgres:\/\/idpool:\$\{POSTGRES_PASSWORD:-\}@postgres:5432\/idpool$/);
    for (const name of ['mysql', 'redis', 'idpool']) expect(services[name].profiles, name).toBeUndefined();
  });

  it('.env.example names every variable the file interpolates, with no value for secrets', () => {
    const example = read('.env.example');
    const used = new Set([...read('docker-compose.yml').matchAll(/(?<!\$)\$\{([A-Z_]+)/g)].map((m) => m[1]));
    for (const name of used) expect(example, name).toMatch(new RegExp(`^${name}=`, 'm'));
    for (const secret of ['MYSQL_ROOT_PASSWORD', 'MYSQL_PASSWORD', 'REDIS_PASSWORD', 'IDPOOL_ADMIN_TOKEN', 'IDPOOL_METRICS_TOKEN', 'POSTGRES_PASSWORD']) {
      expect(example, secret).toMatch(new RegExp(`^${secret}=$`, 'm'));
    }
  });
});

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Array<{ op: string; args: string }> {
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
  const stages: Array<Array<{ op: string; args: string }>> = [];
  for (const i of all) {
    if (i.op === 'FROM') stages.push([]);
    stages[stages.length - 1].push(i);
  }
  const runtime = stages[stages.length - 1];

  it('is multi-stage and the runtime stage installs no compiler', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0].some((i) => i.op === 'RUN' && /g\+\+/.test(i.args))).toBe(true);
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
