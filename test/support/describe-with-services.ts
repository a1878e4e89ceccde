import { describe } from 'vitest';
import { type ServiceNeeds, servicesAvailable } from './services';

/**
 * A `describe` whose tests need shared services (MariaDB, PostgreSQL, Redis).
 * The services are checked once while the file is collected: when one is
 * unreachable, the suite's tests and hooks are skipped with a loud line on
 * stderr, or, with IDPOOL_REQUIRE_SERVICES=1 (CI), the file fails.
 */
export function describeWithServices(name: string, needs: ServiceNeeds, fn: () => void): void {
  describe(name, async () => {
    if (await servicesAvailable(needs)) fn();
    else describe.skip('skipped: a service it needs is unreachable', fn);
  });
}
