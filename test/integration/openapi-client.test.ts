import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';

const ROOT = join(__dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test', 'artifacts');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const USAGE = join(__dirname, 'fixtures', 'openapi-client', 'usage.ts');

/** Strict, and `.ts` (not `.d.ts`) for the generated file so skipLibCheck does not skip it. */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'DOM'],
    types: [],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    noUnusedLocals: true,
    isolatedModules: true,
  },
  files: ['idpool-api.ts', 'usage.ts'],
};

async function tsc(dir: string): Promise<{ code: number | null; output: string }> {
  const proc = spawn(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json'), '--pretty', 'false'], { cwd: dir });
  let output = '';
  proc.stdout.on('data', (d) => (output += String(d)));
  proc.stderr.on('data', (d) => (output += String(d)));
  const code = await new Promise<number | null>((resolve) => proc.once('close', resolve));
  return { code, output };
}

/** What the usage file exports (its own types name the generated ones, which exist only in the test's directory). */
interface Usage {
  exercise(
    baseUrl: string,
    adminToken: string,
    key: string,
    count: number,
    pageSize: number,
  ): Promise<{
    registered: Record<string, unknown> & { secret: string };
    ids: string[];
    listed: { key: string; currentOffset: string | null; pool?: { max: number } }[];
    pages: number;
    refused: { status: number; error: { code: string; message: string } };
  }>;
}

describeWithServices(
  'a client generated from GET /openapi.json (openapi-typescript + openapi-fetch) works against a real service (MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    let setup: StoreSetup;
    let instance: Instance;
    let dir: string;

    beforeAll(async () => {
      setup = await mysqlRedisSetup();
      instance = await startInstance(setup.env);
      mkdirSync(ARTIFACTS, { recursive: true });
      dir = mkdtempSync(join(ARTIFACTS, 'openapi-client-'));
    });

    afterAll(async () => {
      await instance?.stop();
      await setup?.cleanup();
    });

    it('generates types that type-check with a usage file, then registers, takes ids and lists entities through it', async () => {
      // Generated from the served document, as a user would: `npx openapi-typescript <url>/openapi.json`.
      const generated = astToString(await openapiTS(new URL('/openapi.json', instance.url)));
      writeFileSync(join(dir, 'idpool-api.ts'), generated);
      copyFileSync(USAGE, join(dir, 'usage.ts'));
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
      const checked = await tsc(dir);
      expect(checked.output, `tsc over ${dir}`).toBe('');
      expect(checked.code).toBe(0);

      // Two entities besides the client's own, so listing one per page walks three pages.
      const others = [uniqueKey('oc_a'), uniqueKey('oc_b')];
      const usage = (await import(join(dir, 'usage.ts'))) as Usage;
      for (const key of others) await usage.exercise(instance.url, ADMIN_TOKEN, key, 1, 1000);
      const key = uniqueKey('oc');
      const outcome = await usage.exercise(instance.url, ADMIN_TOKEN, key, 5, 1);

      expect(outcome.registered).toMatchObject({ key, mode: 'monotonic', step: 100, maxPoolSize: 2000 });
      expect(outcome.registered.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(outcome.ids).toHaveLength(5);
      const ids = outcome.ids.map(BigInt);
      for (let i = 1; i < ids.length; i++)
        expect(ids[i] > ids[i - 1], `ids ${outcome.ids.join(', ')} strictly increase`).toBe(true);
      expect(outcome.listed.map((e) => e.key)).toEqual([key, ...others].sort());
      expect(outcome.pages).toBe(3);
      const listed = outcome.listed.find((e) => e.key === key)!;
      expect(listed.pool?.max).toBe(2000);
      expect(BigInt(listed.currentOffset!)).toBeGreaterThan(ids[4]);
      expect(outcome.refused).toEqual({ status: 401, error: { code: 'unauthorized', message: expect.any(String) } });
      rmSync(dir, { recursive: true, force: true });
    });
  },
);
