import { describe } from 'vitest';
import { type ServiceNeeds, servicesAvailable } from './services';

/**
 * A `describe` whose tests need shared services (MariaDB, PostgreSQL, Redis)
 * or programs of the machine (a private mariadbd, network namespaces,
 * promtool, prometheus). What it needs is checked once while the file is
 * collected: when something is missing, the suite's tests and hooks are
 * skipped with a loud line on stderr, or, with IDPOOL_REQUIRE_SERVICES=1
 * (CI), the file fails. Tests inside never check for themselves.
 */
export function describeWithServices(name: string, needs: ServiceNeeds, fn: () => void): void {
  describe(name, async () => {
    if (await servicesAvailable(needs)) fn();
    else describe.skip('skipped: something it needs is missing', fn);
  });
}
