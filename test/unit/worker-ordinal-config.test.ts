import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config';

function problem(env: Record<string, string>): { variable: string; message: string } {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return { variable: err.variable, message: err.message };
    throw err;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

describe('IDPOOL_WORKER_ID=ordinal: the worker id from the pod', () => {
  it('is off by default: the database lease, no pod worker, HOSTNAME ignored', () => {
    const config = loadConfig({ HOSTNAME: 'idpool-3' });
    expect(config.podWorker).toBeUndefined();
    expect(config.workerId).toBeUndefined();
  });

  it("takes the ordinal from a StatefulSet pod's HOSTNAME, plus IDPOOL_WORKER_ID_OFFSET", () => {
    expect(loadConfig({ IDPOOL_WORKER_ID: 'ordinal', HOSTNAME: 'idpool-3' }).podWorker).toEqual({
      workerId: 3,
      from: 'HOSTNAME idpool-3',
    });
    const config = loadConfig({ IDPOOL_WORKER_ID: ' Ordinal ', HOSTNAME: 'idpool-3', IDPOOL_WORKER_ID_OFFSET: '10' });
    expect(config.podWorker).toEqual({ workerId: 13, from: 'HOSTNAME idpool-3 + IDPOOL_WORKER_ID_OFFSET 10' });
    // Not a fixed (unleased) worker id.
    expect(config.workerId).toBeUndefined();
    // The last dash-number counts; a name may hold dashes and digits before it.
    expect(loadConfig({ IDPOOL_WORKER_ID: 'ordinal', HOSTNAME: 'ids-eu-2-17' }).podWorker?.workerId).toBe(17);
  });

  it('IDPOOL_POD_INDEX (the pod-index label through the downward API) wins over HOSTNAME', () => {
    const config = loadConfig({
      IDPOOL_WORKER_ID: 'ordinal',
      IDPOOL_POD_INDEX: '5',
      HOSTNAME: 'idpool-3',
      IDPOOL_WORKER_ID_OFFSET: '1',
    });
    expect(config.podWorker).toEqual({ workerId: 6, from: 'IDPOOL_POD_INDEX 5 + IDPOOL_WORKER_ID_OFFSET 1' });
  });

  it('refuses what names no pod, or a worker id beyond the layout, naming the variable', () => {
    expect(problem({ IDPOOL_WORKER_ID: 'ordinal' })).toEqual({
      variable: 'IDPOOL_WORKER_ID',
      message: expect.stringMatching(/IDPOOL_POD_INDEX or a StatefulSet pod's HOSTNAME .* HOSTNAME is unset/) as string,
    });
    expect(problem({ IDPOOL_WORKER_ID: 'ordinal', HOSTNAME: 'web7' }).message).toContain('HOSTNAME is "web7"');
    expect(problem({ IDPOOL_WORKER_ID: 'ordinal', IDPOOL_POD_INDEX: 'two' })).toEqual({
      variable: 'IDPOOL_POD_INDEX',
      message: 'IDPOOL_POD_INDEX: must be an integer from 0 to 1023, got "two"',
    });
    expect(problem({ IDPOOL_WORKER_ID: 'ordinal', HOSTNAME: 'idpool-1024' }).message).toContain(
      "above the layout's highest worker id, 1023",
    );
    expect(
      problem({
        IDPOOL_WORKER_ID: 'ordinal',
        HOSTNAME: 'idpool-3',
        IDPOOL_SNOWFLAKE_WORKER_BITS: '3',
        IDPOOL_WORKER_ID_OFFSET: '5',
      }),
    ).toEqual({
      variable: 'IDPOOL_WORKER_ID_OFFSET',
      message: "IDPOOL_WORKER_ID_OFFSET: HOSTNAME idpool-3 plus offset 5 is worker id 8, above the layout's highest, 7",
    });
    expect(problem({ IDPOOL_WORKER_ID: 'ordinal', HOSTNAME: 'idpool-3', IDPOOL_WORKER_ID_OFFSET: '-1' }).variable).toBe(
      'IDPOOL_WORKER_ID_OFFSET',
    );
  });

  it('IDPOOL_WORKER_ID_OFFSET without ordinal is refused; a number or nonsense in IDPOOL_WORKER_ID reads as before', () => {
    expect(problem({ IDPOOL_WORKER_ID_OFFSET: '10' })).toEqual({
      variable: 'IDPOOL_WORKER_ID_OFFSET',
      message: 'IDPOOL_WORKER_ID_OFFSET: is read only with IDPOOL_WORKER_ID=ordinal',
    });
    expect(loadConfig({ IDPOOL_WORKER_ID: '7', HOSTNAME: 'idpool-3' })).toMatchObject({
      workerId: 7,
      podWorker: undefined,
    });
    expect(problem({ IDPOOL_WORKER_ID: 'ordinals' }).message).toContain('must be an integer from 0 to 1023');
  });
});
