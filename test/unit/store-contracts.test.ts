import { describe } from 'vitest';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { MemoryFleetStore } from '../../src/fleet/memory-fleet-store';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { MemoryEntityRateLimit } from '../../src/pool/rate-limit';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { FakeNumberCounter } from '../../src/segment/fake-number-counter';
import { FakeWorkerHolders } from '../../src/worker/fake-worker-holders';
import { FakeWorkerStore } from '../../src/worker/fake-worker-store';
import { FakeClock } from '../support/clock';
import { entityRateLimitContract } from '../support/contracts/entity-rate-limit';
import { entityStoreContract } from '../support/contracts/entity-store';
import { fleetStoreContract } from '../support/contracts/fleet-store';
import { numberCounterContract } from '../support/contracts/number-counter';
import { poolStoreContract } from '../support/contracts/pool-store';
import { refillLockContract } from '../support/contracts/refill-lock';
import { segmentAllocatorContract } from '../support/contracts/segment-allocator';
import { workerHoldersContract } from '../support/contracts/worker-holders';
import { workerStoreContract } from '../support/contracts/worker-store';

// The same cases run against the real stores in test/integration/store-contracts.test.ts.
describe('FakeEntityStore keeps the EntityStore contract', () => {
  entityStoreContract(async () => new FakeEntityStore());
});

describe('FakeSegmentAllocator keeps the SegmentAllocator contract', () => {
  segmentAllocatorContract(async () => {
    const allocator = new FakeSegmentAllocator();
    return { allocator, addEntity: async (key, startOffset) => allocator.addEntity(key, startOffset) };
  });
});

describe('FakeWorkerStore keeps the WorkerStore contract', () => {
  workerStoreContract(async () => {
    const clock = new FakeClock();
    return new FakeWorkerStore(() => clock.now());
  });
});

describe('MemoryPoolStore keeps the PoolStore contract', () => {
  poolStoreContract(async () => new MemoryPoolStore(new FakeClock()));
});

describe('FakeWorkerHolders keeps the WorkerHolders contract', () => {
  workerHoldersContract(async () => new FakeWorkerHolders());
});

describe('MemoryFleetStore keeps the FleetStore contract', () => {
  fleetStoreContract(async () => new MemoryFleetStore());
});

describe('MemoryRefillLock keeps the RefillLock contract', () => {
  refillLockContract(async () => new MemoryRefillLock());
});

describe('MemoryEntityRateLimit keeps the EntityRateLimit contract', () => {
  entityRateLimitContract(async () => {
    const clock = new FakeClock();
    // The next second of the fake clock, at its first ms.
    return {
      limit: new MemoryEntityRateLimit(clock),
      freshSecond: async () => clock.advance(1000 - (clock.now() % 1000)),
    };
  });
});

describe('FakeNumberCounter keeps the number counter contract', () => {
  numberCounterContract(async () => new FakeNumberCounter());
});
