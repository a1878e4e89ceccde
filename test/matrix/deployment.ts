/**
 * One shared deployment per backend for the matrix: one real process of the
 * build, every kind's entity registered once, and what the doors need to
 * reach it (its URL, the admin token, a Redis connection for direct pops).
 */
import Redis from 'ioredis';
import { entityKeys } from '../../src/redis/keys';
import { STORE_SETUPS, type StoreSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, takeWhenReady } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { REDIS_URL, type ServiceNeeds } from '../support/services';
import { KINDS, type Backend, type Kind, type KindName } from './table';

/** Ids one door of a row took, in the order taken. */
export interface Taken {
  readonly door: string;
  readonly ids: readonly string[];
}

/** A kind's entity on the deployment, and every id its doors took. */
export interface Row {
  readonly kind: Kind;
  readonly key: string;
  readonly secret: string;
  readonly taken: Taken[];
}

export interface Deployment {
  readonly backend: Backend;
  readonly url: string;
  readonly admin: string;
  readonly instance: Instance;
  /** The shared Redis and the deployment's prefix: undefined on the embedded backend. */
  readonly redis?: { client: Redis; keys: (entityKey: string) => { ids: string; epoch: string } };
  readonly rows: ReadonlyMap<KindName, Row>;
  stop(): Promise<void>;
}

export const BACKEND_NEEDS: Record<Backend, ServiceNeeds> = {
  embedded: {},
  'mariadb+redis': { mysql: true, redis: true },
  'postgres+redis': { postgres: true, redis: true },
};

/** The store setups of the core HTTP tests (test/support/configs.ts), by backend. */
const SETUP_NAMES: Record<Backend, string> = {
  embedded: 'sqlite+memory',
  'mariadb+redis': 'mysql+redis',
  'postgres+redis': 'postgres+redis',
};

function setupOf(backend: Backend): Promise<StoreSetup> {
  const setup = STORE_SETUPS.find((s) => s.name === SETUP_NAMES[backend]);
  if (!setup) throw new Error(`no store setup ${SETUP_NAMES[backend]}`);
  return setup.create();
}

/** Starts the backend's instance (Leaf's and Tinyid's routes on) and registers one entity per kind. */
export async function startDeployment(backend: Backend): Promise<Deployment> {
  const setup = await setupOf(backend);
  let instance: Instance | undefined;
  let client: Redis | undefined;
  try {
    instance = await startInstance({ ...setup.env, IDPOOL_COMPAT: 'leaf,tinyid' });
    const url = instance.url;
    const rows = new Map<KindName, Row>();
    for (const kind of KINDS) {
      const key = uniqueKey(`mx-${kind.name.replace(/ /g, '-')}`);
      const res = await call(`${url}/admin/apps`, {
        token: ADMIN_TOKEN,
        body: { key, name: 'matrix', compat: ['leaf'], ...kind.register },
      });
      if (res.status !== 201) throw new Error(`registering ${kind.name}: ${res.status} ${JSON.stringify(res.body)}`);
      rows.set(kind.name, { kind, key, secret: res.body.secret as string, taken: [] });
    }
    // A first take of each, asked again on 503 with Retry-After as a client does: a new entity's
    // pool (a business-number list) may still be filling. Its id counts with the row's.
    for (const row of rows.values()) {
      const first = await takeWhenReady(url, row.key, row.secret, 1);
      if (first.status !== 200)
        throw new Error(`first take of ${row.kind.name}: ${first.status} ${JSON.stringify(first.body)}`);
      row.taken.push({ door: 'first take', ids: first.body.ids });
    }
    const prefix = setup.redisPrefix;
    if (prefix !== undefined) client = new Redis(REDIS_URL);
    const running = instance;
    return {
      backend,
      url,
      admin: ADMIN_TOKEN,
      instance: running,
      redis: client && prefix !== undefined ? { client, keys: (k) => entityKeys(k, prefix) } : undefined,
      rows,
      async stop() {
        client?.disconnect();
        await running.stop();
        await setup.cleanup();
      },
    };
  } catch (err) {
    client?.disconnect();
    await instance?.kill9();
    await setup.cleanup();
    throw err;
  }
}
