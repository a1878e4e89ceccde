import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Instance, startInstance } from '../support/processes';

const ROOT = join(__dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test', 'artifacts');
const SPECTRAL = join(ROOT, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js');
/** `extends: ["spectral:oas"]`: the ruleset ships inside the CLI, so linting needs no network. */
const RULESET = join(ROOT, '.spectral.yaml');

interface Doc {
  paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
}
interface Finding {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

const SEVERITY = ['error', 'warning', 'info', 'hint'];
const show = (f: Finding) => `${SEVERITY[f.severity] ?? f.severity} ${f.code} at ${f.path.join('.')}: ${f.message}`;

/** Runs the Spectral CLI on `doc` with the repository's ruleset; every finding, hints included. */
async function lint(dir: string, name: string, doc: unknown): Promise<Finding[]> {
  const file = join(dir, `${name}.json`);
  const out = join(dir, `${name}.spectral.json`);
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const proc = spawn(
    process.execPath,
    [SPECTRAL, 'lint', file, '--ruleset', RULESET, '--format', 'json', '--output', out, '--fail-severity', 'hint'],
    { cwd: ROOT },
  );
  let log = '';
  proc.stdout.on('data', (d) => (log += String(d)));
  proc.stderr.on('data', (d) => (log += String(d)));
  const code = await new Promise<number | null>((resolve) => proc.once('close', resolve));
  // 0: nothing found; 1: findings at or above --fail-severity; anything else: Spectral itself failed.
  expect([0, 1], `spectral exited ${code}:\n${log}`).toContain(code);
  const findings = JSON.parse(readFileSync(out, 'utf8')) as Finding[];
  expect(code, `exit code ${code} with ${findings.length} findings:\n${log}`).toBe(findings.length ? 1 : 0);
  return findings;
}

describe('GET /openapi.json of a running service lints clean under spectral:oas', () => {
  let dir: string;
  let instance: Instance;
  let doc: Doc;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dir = mkdtempSync(join(ARTIFACTS, 'openapi-lint-'));
    instance = await startInstance({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}` });
    const res = await fetch(`${instance.url}/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Doc;
  });

  afterAll(async () => {
    await instance?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has no error, warning, info or hint', async () => {
    const findings = await lint(dir, 'served', doc);
    expect(findings.map(show), 'Spectral findings').toEqual([]);
  });

  it('still finds a missing operationId, tags and description (the ruleset is really applied)', async () => {
    const broken = structuredClone(doc);
    const take = broken.paths['/apps/{key}/ids'].post as Record<string, unknown>;
    delete take.operationId;
    delete take.tags;
    delete take.description;
    const findings = await lint(dir, 'broken', broken);
    const at = (f: Finding) => `${f.code} ${f.path.join('.')}`;
    expect(findings.map(at).sort()).toEqual(
      ['operation-description', 'operation-operationId', 'operation-tags'].map(
        (code) => `${code} paths./apps/{key}/ids.post`,
      ),
    );
    expect(findings.every((f) => f.severity === 1)).toBe(true);
  });

  it('names every operation with the operationId generated clients use as method names', () => {
    const ids = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op.operationId, op.tags?.join()]),
    );
    // Published names: renaming one breaks every generated client.
    expect(Object.fromEntries(ids.map(([route, id, tags]) => [route, `${id} (${tags})`]))).toEqual({
      'POST /apps/{key}/ids': 'takeIds (ids)',
      'GET /apps/{key}/ids/{id}': 'explainId (ids)',
      'POST /apps/{key}/segments': 'leaseSegment (ids)',
      'POST /admin/apps': 'registerEntity (admin)',
      'GET /admin/apps': 'listEntities (admin)',
      'GET /admin/apps/{key}': 'getEntity (admin)',
      'PATCH /admin/apps/{key}': 'updateEntity (admin)',
      'DELETE /admin/apps/{key}': 'retireEntity (admin)',
      'POST /admin/apps/{key}/secret': 'rotateSecret (admin)',
      'POST /admin/apps/{key}/raise': 'raiseEntity (admin)',
      'POST /admin/apps/{key}/hold': 'holdEntity (admin)',
      'POST /admin/apps/{key}/release': 'releaseEntity (admin)',
      'POST /admin/apps/{key}/finish': 'finishLiveCutover (admin)',
      'GET /admin/live': 'listLiveCutovers (admin)',
      'POST /admin/apps/{key}/secrets': 'addSecret (admin)',
      'DELETE /admin/apps/{key}/secrets/{secretId}': 'removeSecret (admin)',
      'GET /admin/workers': 'listWorkers (ops)',
      'GET /admin/ops': 'opsOverview (ops)',
      'GET /admin/instances': 'listInstances (ops)',
      'GET /admin/ui': 'dashboardPage (ops)',
      'GET /admin/ui/{asset}': 'dashboardAsset (ops)',
      'GET /healthz': 'healthz (ops)',
      'GET /readyz': 'readyz (ops)',
      'GET /metrics': 'metrics (ops)',
      'GET /openapi.json': 'openapi (ops)',
      'GET /docs': 'apiDocs (ops)',
      'GET /docs/{asset}': 'apiDocsAsset (ops)',
    });
  });
});
