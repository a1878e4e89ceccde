import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock';
import { ANSWER_TTL_MS, type IdempotencyStore, type IdempotentAnswer, type ProduceIds, checked } from './store';

interface MemoryEntry {
  entityKey: string;
  count: number;
  answer: Promise<string[]>;
}

/** Default bound of the stored answers (IDPOOL_IDEMPOTENCY_MAX_MB): ~20,000 batches of 1,000 ids at ~3 KB each. */
export const DEFAULT_IDEMPOTENCY_MAX_MB = 64;

/** Heap bytes per id: 40 measured for 13-digit ids (heapUsed over 1M, Node 24.21), 4 to spare; 200 per entry. */
const BYTES_PER_ID = 44;
const BYTES_PER_ENTRY = 200;

/**
 * The embedded mode's store: LRU-bounded in bytes, and per entity to a quarter (its oldest go first) so one busy
 * entity cannot push the others out. Requests with one key share one promise.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries: LRUCache<string, MemoryEntry>;
  /** Each entity's entries, oldest first, and their bytes. */
  private readonly byEntity = new Map<string, { bytes: number; ids: Set<string> }>();
  private readonly bytesPerEntity: number;

  constructor(clock: Clock, maxBytes = DEFAULT_IDEMPOTENCY_MAX_MB * 1024 * 1024) {
    this.bytesPerEntity = Math.floor(maxBytes / 4);
    this.entries = new LRUCache<string, MemoryEntry>({
      maxSize: maxBytes,
      sizeCalculation: (entry, key) => entrySize(key, entry.count),
      ttl: ANSWER_TTL_MS,
      // Expired entries are dropped when met or evicted; no timer per entry.
      ttlAutopurge: false,
      // Read the (injected) clock on every check instead of caching it for 1 ms.
      ttlResolution: 0,
      // +1: lru-cache takes an entry started at time 0 as one without a TTL.
      perf: { now: () => clock.monotonic() + 1 },
      // However an entry goes (evicted, expired, deleted), its entity's count follows.
      dispose: (entry, id) => {
        const mine = this.byEntity.get(entry.entityKey);
        if (!mine?.ids.delete(id)) return;
        mine.bytes -= entrySize(id, entry.count);
        if (mine.ids.size === 0) this.byEntity.delete(entry.entityKey);
      },
    });
  }

  /** Makes room for `bytes` more of `entityKey`'s answers by dropping its oldest. */
  private fitEntity(entityKey: string, bytes: number): void {
    const mine = this.byEntity.get(entityKey);
    while (mine && mine.bytes + bytes > this.bytesPerEntity) {
      const oldest = mine.ids.values().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  async once(entityKey: string, requestKey: string, count: number, produce: ProduceIds): Promise<IdempotentAnswer> {
    const id = `${entityKey}\n${requestKey}`;
    const found = this.entries.get(id);
    if (found) {
      if (found.count !== count) checked({ count: found.count, ids: [] }, count);
      return { ids: await found.answer, replayed: true };
    }
    const answer = produce();
    const entry: MemoryEntry = { entityKey, count, answer };
    const bytes = entrySize(id, count);
    this.fitEntity(entityKey, bytes);
    this.entries.set(id, entry);
    if (this.entries.peek(id) === entry) {
      const mine = this.byEntity.get(entityKey) ?? { bytes: 0, ids: new Set<string>() };
      mine.bytes += bytes;
      mine.ids.add(id);
      this.byEntity.set(entityKey, mine);
    }
    // A failed request is forgotten so a retry runs again.
    answer.catch(() => {
      if (this.entries.peek(id) === entry) this.entries.delete(id);
    });
    return { ids: await answer, replayed: false };
  }

  /** Bytes of answers held (as counted for the bound). */
  get sizeBytes(): number {
    return this.entries.calculatedSize;
  }

  /** Bytes of one entity's answers held. */
  entityBytes(entityKey: string): number {
    return this.byEntity.get(entityKey)?.bytes ?? 0;
  }
}

const entrySize = (id: string, count: number) => BYTES_PER_ENTRY + id.length * 2 + count * BYTES_PER_ID;
