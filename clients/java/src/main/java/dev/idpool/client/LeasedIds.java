package dev.idpool.client;

import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Ids of one {@code trend} entity handed out in this process from segments the service leases
 * ({@code POST /apps/:key/segments}): Leaf's double buffer. Once {@code prefetchAt} (10 %) of the
 * current segment is used, the next one is leased in the background; the lease size doubles while
 * a segment lasts less than {@code targetSegment} (1 s) and halves when one lasts more than twice
 * that, between {@code minSize} (default: the entity's step) and {@code maxSize} (10M, the
 * service's limit).
 *
 * <p>Thread-safe. {@link #next()} from a current segment is one atomic add and two compares; only
 * switching segments takes a lock. Every id is {@code ≡ remainder (mod delta)} as the lease says.
 * Ids grow within one segment; across threads and processes they are unique, not ordered (what a
 * {@code trend} entity promises). Ids left when the process stops are wasted, never repeated.
 */
public final class LeasedIds {
  /** One leased segment: {@code value} is the next id to hand out; ids up to {@code last}. */
  private static final class Segment {
    final AtomicLong value;
    final long first;
    final long last;
    final long delta;
    /** The id whose handing out starts the next lease: exactly one caller draws it. */
    final long loadNextAt;

    Segment(long first, long last, long delta, long loadNextAt) {
      this.value = new AtomicLong(first);
      this.first = first;
      this.last = last;
      this.delta = delta;
      this.loadNextAt = loadNextAt;
    }
  }

  /** Leases a segment of {@code size} ids (0: the entity's step). */
  interface LeaseFetch {
    Map<?, ?> lease(int size);
  }

  private final String entityKey;
  private final LeaseFetch fetch;
  private final Executor executor;
  private final LeaseSettings settings;
  private final Object lock = new Object();

  private volatile Segment current = new Segment(0, -1, 1, -1);
  // Guarded by lock.
  private Segment spare;
  private boolean loading;
  private RuntimeException failure;
  private boolean closed;
  private int size;
  private int baseSize;
  private long lastLeaseAt = -1;
  private long leases;
  // Read and written by one lease at a time (startLease runs one), each begun under the lock.
  /** The largest lease granted so far. */
  private int granted;
  /** The size no lease exceeds once one larger than {@link #granted} was refused; 0: none yet. */
  private int cap;

  LeasedIds(String entityKey, LeaseFetch fetch, Executor executor, LeaseSettings settings) {
    this.entityKey = entityKey;
    this.fetch = fetch;
    this.executor = executor;
    this.settings = settings;
  }

  /** The next id. Waits (up to {@code leaseWait}) only when both segments are used up. */
  public long next() {
    Segment s = current;
    long id = s.value.getAndAdd(s.delta);
    // id < first: the add overflowed past 2^63 - 1 on a spent segment at the top of the line.
    if (id <= s.last && id >= s.first) {
      if (id == s.loadNextAt) prefetch();
      return id;
    }
    return nextSlow();
  }

  /** {@code count} ids, each as {@link #next()} hands them out. */
  public long[] take(int count) {
    if (count < 1) throw new IllegalArgumentException("count must be positive, got " + count);
    long[] ids = new long[count];
    for (int k = 0; k < count; k++) ids[k] = next();
    return ids;
  }

  /**
   * Leases the first segment now and waits for it, however long the lease takes (it ends within
   * the client's {@code deadlineMs}); throws its failure. Else the first {@link #next()} leases it
   * and waits at most {@code leaseWaitMs}.
   */
  public void open() {
    synchronized (lock) {
      for (; ; ) {
        if (closed) throw new IdpoolException("leased ids of " + entityKey + " are closed");
        Segment s = current;
        if (spare != null || s.value.get() <= s.last) return;
        if (failure != null && !loading) {
          RuntimeException f = failure;
          failure = null;
          throw f;
        }
        startLease();
        try {
          lock.wait();
        } catch (InterruptedException err) {
          Thread.currentThread().interrupt();
          throw new IdpoolException("interrupted", err);
        }
      }
    }
  }

  /** Segments leased so far. */
  public long leases() {
    synchronized (lock) {
      return leases;
    }
  }

  /** Stops leasing; later calls throw. Ids still leased are dropped, never handed out. */
  public void close() {
    synchronized (lock) {
      closed = true;
      spare = null;
      current = new Segment(0, -1, 1, -1);
      lock.notifyAll();
    }
  }

  private void prefetch() {
    synchronized (lock) {
      if (spare == null) startLease();
    }
  }

  private long nextSlow() {
    synchronized (lock) {
      long deadline = System.nanoTime() + settings.waitMs * 1_000_000;
      for (; ; ) {
        if (closed) throw new IdpoolException("leased ids of " + entityKey + " are closed");
        Segment s = current;
        long id = s.value.getAndAdd(s.delta);
        if (id <= s.last && id >= s.first) {
          if (id == s.loadNextAt && spare == null) startLease();
          return id;
        }
        if (spare != null) {
          current = spare;
          spare = null;
          continue;
        }
        if (failure != null && !loading) {
          RuntimeException f = failure;
          failure = null;
          throw f;
        }
        startLease();
        long left = deadline - System.nanoTime();
        if (left <= 0)
          throw new LeaseNotReadyException(
              "no leased ids for " + entityKey + " within " + settings.waitMs + " ms");
        try {
          lock.wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException err) {
          Thread.currentThread().interrupt();
          throw new IdpoolException("interrupted", err);
        }
      }
    }
  }

  /** Called with the lock held. */
  private void startLease() {
    if (loading || closed) return;
    loading = true;
    long now = System.nanoTime() / 1_000_000;
    int ask =
        lastLeaseAt < 0
            ? settings.minSize
            : nextStep(size, now - lastLeaseAt, settings.minSize > 0 ? settings.minSize : Math.max(baseSize, 1),
                settings.maxSize, settings.targetSegmentMs);
    executor.execute(() -> lease(ask, now));
  }

  /**
   * Leaf's adaptive step: a segment used up faster than {@code targetMs} doubles the next, one
   * that lasted more than twice as long halves it; always within {@code [min, max]}.
   */
  static int nextStep(int previous, long sinceLastLeaseMs, int min, int max, long targetMs) {
    long step = previous;
    if (sinceLastLeaseMs < targetMs) step = (long) previous * 2;
    else if (sinceLastLeaseMs >= 2 * targetMs) step = previous / 2;
    return (int) Math.min(Math.max(step, min), Math.max(max, min));
  }

  private void lease(int ask, long startedAt) {
    Segment segment = null;
    RuntimeException error = null;
    int count = 0;
    try {
      Map<?, ?> answer = leaseCapped(ask);
      count = intField(answer, "count");
      granted = Math.max(granted, count);
      long delta = intField(answer, "delta");
      long first = Long.parseLong(stringField(answer, "first"));
      long last = Long.parseLong(stringField(answer, "last"));
      if (count < 1 || delta < 1 || last - first != (count - 1) * delta)
        throw new IdpoolException("the lease of " + entityKey + " does not hold " + count + " ids");
      long loadAt = Math.max(0, (long) Math.ceil(count * settings.prefetchAt) - 1);
      segment = new Segment(first, last, delta, first + loadAt * delta);
    } catch (RuntimeException err) {
      error = err instanceof IdpoolException ? err : new IdpoolException("the lease of " + entityKey + " failed: " + err, err);
    }
    synchronized (lock) {
      loading = false;
      if (segment != null) {
        size = count;
        if (baseSize == 0) baseSize = count;
        lastLeaseAt = startedAt;
        leases++;
        if (!closed) spare = segment;
        failure = null;
      } else {
        failure = error;
      }
      lock.notifyAll();
    }
  }

  /**
   * The adaptive size doubles while segments go fast, but an entity leases no more than its {@code
   * maxSizePerSecond} at once (400 above it), a limit the client is not told. A size refused as
   * invalid once a smaller one was granted caps the sizes at the largest granted and is asked again
   * at that size at once: a default {@code trend} entity (5,000 a second) leases 4,000 ids at a
   * time instead of failing at its first 8,000.
   */
  private Map<?, ?> leaseCapped(int ask) {
    int size = cap > 0 && ask > cap ? cap : ask;
    try {
      return fetch.lease(size);
    } catch (IdpoolHttpException.InvalidRequest err) {
      if (size == 0 || granted == 0 || size <= granted) throw err;
      cap = granted;
      return fetch.lease(granted);
    }
  }

  private String stringField(Map<?, ?> answer, String name) {
    Object v = answer.get(name);
    if (!(v instanceof String) || !((String) v).matches("\\d{1,19}"))
      throw new IdpoolException("the lease of " + entityKey + " came back malformed (" + name + ")");
    return (String) v;
  }

  private int intField(Map<?, ?> answer, String name) {
    Object v = answer.get(name);
    if (!(v instanceof Long) || (Long) v < 1 || (Long) v > Integer.MAX_VALUE)
      throw new IdpoolException("the lease of " + entityKey + " came back malformed (" + name + ")");
    return (int) (long) (Long) v;
  }

  /** How leases are sized and fetched; defaults as the TypeScript SDK's. */
  static final class LeaseSettings {
    double prefetchAt = 0.1;
    /** 0: the entity's step, as the service leases by default. */
    int minSize = 0;
    int maxSize = 10_000_000;
    long targetSegmentMs = 1000;
    long waitMs = 2000;
  }
}
