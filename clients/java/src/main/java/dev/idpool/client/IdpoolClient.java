package dev.idpool.client;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

/**
 * Takes ids from an idpool service, with failover over several instances.
 *
 * <pre>{@code
 * IdpoolClient client = IdpoolClient.builder()
 *     .endpoints("http://idpool-a:8080", "http://idpool-b:8080")
 *     .entity("clicks", System.getenv("CLICKS_SECRET"))   // a trend entity
 *     .entity("tickets", System.getenv("TICKETS_SECRET")) // format TKT{yyyy}{MM}{dd}-{seq:6}
 *     .build();
 * long id = client.next("clicks");
 * long fast = client.leased("clicks").next(); // in-process, from leased segments (trend entities)
 * String ticket = client.nextNumber("tickets"); // "TKT20261128-000001"
 * }</pre>
 *
 * Ids are 64-bit ({@code long}); on the wire they are decimal strings. Business numbers are
 * strings ({@link #takeNumbers}). Thread-safe.
 */
public final class IdpoolClient implements AutoCloseable {
  private static final Pattern KEY = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  /** An integer id as the service writes one: no sign, no leading zero. */
  private static final Pattern INTEGER_ID = Pattern.compile("0|[1-9][0-9]{0,18}");
  /** What a take may answer: decimal ids, or business numbers (docs/numbers.md). */
  private static final Pattern TAKEN = Pattern.compile("[A-Za-z0-9_./-]{1,200}");

  private final Transport transport;
  private final Map<String, String> secrets;
  private final Map<String, LeasedIds> leased = new HashMap<>();
  private final Builder settings;
  private final ExecutorService leaser =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "idpool-lease");
            t.setDaemon(true);
            return t;
          });

  private IdpoolClient(Builder b) {
    if (b.endpoints.isEmpty()) throw new IllegalArgumentException("endpoints must name at least one URL");
    for (String url : b.endpoints) {
      if (!url.matches("https?://[^/].*"))
        throw new IllegalArgumentException("endpoint \"" + url + "\" must be an http:// or https:// URL");
    }
    settings = b;
    secrets = new HashMap<>(b.secrets);
    transport =
        new Transport(
            b.endpoints, b.timeoutMs, b.deadlineMs, b.maxAttempts, b.downForMs, b.maxRetryAfterMs, b.waitOnRateLimit);
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * {@code count} new ids of an entity, from the service ({@code POST /apps/:key/ids}). An entity
   * that issues business numbers answers strings such as {@code INV20261129-000304}: this throws
   * {@link BusinessNumberException}, which holds them (they are taken); use {@link #takeNumbers}.
   */
  public long[] take(String entityKey, int count) {
    List<String> taken = takeStrings(entityKey, count);
    long[] out = new long[count];
    for (int k = 0; k < count; k++) {
      String id = taken.get(k);
      // Canonical decimals only: a number such as 000123 would lose its zeros as a long.
      if (!INTEGER_ID.matcher(id).matches()) throw new BusinessNumberException(entityKey, taken);
      try {
        out[k] = Long.parseLong(id);
      } catch (NumberFormatException err) {
        throw new BusinessNumberException(entityKey, taken);
      }
    }
    return out;
  }

  /** One new id from the service. */
  public long next(String entityKey) {
    return take(entityKey, 1)[0];
  }

  /**
   * {@code count} new business numbers of an entity registered with a {@code format} (e.g. {@code
   * INV20261129-000304}, docs/numbers.md), as the strings the service answers; of a plain entity,
   * its ids as decimal strings.
   */
  public String[] takeNumbers(String entityKey, int count) {
    return takeStrings(entityKey, count).toArray(new String[0]);
  }

  /**
   * {@code count} new numbers of a gapless series (docs/numbers.md "Gapless series"), each entered
   * in its ledger with {@code reference} (the invoice's id, 1-128 characters; null for none). Every
   * attempt of the call carries one Idempotency-Key, so a retry after a timeout gets the numbers the
   * first attempt was issued, never new ones.
   */
  public String[] takeNumbers(String entityKey, int count, String reference) {
    return takeNumbers(entityKey, count, reference, null);
  }

  /**
   * As {@link #takeNumbers(String, int, String)} with the caller's {@code idempotencyKey} (e.g.
   * derived from the invoice's id): calling again with it, even from another process or days later,
   * answers the same numbers. The same key with another count or reference is a 409 {@code conflict}.
   */
  public String[] takeNumbers(String entityKey, int count, String reference, String idempotencyKey) {
    return takeStrings(entityKey, count, reference, idempotencyKey).toArray(new String[0]);
  }

  /** One new business number. */
  public String nextNumber(String entityKey) {
    return takeNumbers(entityKey, 1)[0];
  }

  private List<String> takeStrings(String entityKey, int count) {
    return takeStrings(entityKey, count, null, null);
  }

  private List<String> takeStrings(String entityKey, int count, String reference, String idempotencyKey) {
    if (count < 1) throw new IllegalArgumentException("count must be a positive integer, got " + count);
    String body = "{\"count\":" + count + (reference == null ? "" : ",\"reference\":" + Json.quote(reference)) + "}";
    Object answer =
        transport.send(
            "POST", path(entityKey, "/ids"), secret(entityKey), body, transport.waitsOnRateLimit(), idempotencyKey);
    Object ids = answer instanceof Map ? ((Map<?, ?>) answer).get("ids") : null;
    if (!(ids instanceof List) || ((List<?>) ids).size() != count)
      throw new IdpoolException("idpool answered POST /apps/" + entityKey + "/ids without " + count + " ids");
    List<String> out = new ArrayList<>(count);
    for (Object id : (List<?>) ids) {
      if (!(id instanceof String) || !TAKEN.matcher((String) id).matches())
        throw new IdpoolException("idpool answered POST /apps/" + entityKey + "/ids with an id that is not a string: " + id);
      out.add((String) id);
    }
    return out;
  }

  /**
   * The in-process leased ids of a {@code trend} entity: one instance per entity and client,
   * shared by every thread. A {@code monotonic} entity's lease is refused (409 {@code conflict}).
   */
  public LeasedIds leased(String entityKey) {
    String secret = secret(entityKey);
    synchronized (leased) {
      return leased.computeIfAbsent(
          entityKey,
          key -> {
            LeasedIds.LeaseSettings s = new LeasedIds.LeaseSettings();
            s.prefetchAt = settings.prefetchAt;
            s.minSize = settings.leaseMinSize;
            s.maxSize = settings.leaseMaxSize;
            s.targetSegmentMs = settings.targetSegmentMs;
            s.waitMs = settings.leaseWaitMs;
            return new LeasedIds(
                key,
                size -> {
                  // The caller waits for ids, not for a refusal: a 429 is waited out within the deadline.
                  Object a =
                      transport.send(
                          "POST", path(key, "/segments"), secret, size > 0 ? "{\"size\":" + size + "}" : "{}", true);
                  if (!(a instanceof Map)) throw new IdpoolException("the lease of " + key + " came back malformed");
                  return (Map<?, ?>) a;
                },
                leaser,
                s);
          });
    }
  }

  /** Explains a snowflake id of a {@code snowflake} entity ({@code GET /apps/:key/ids/:id}). */
  public SnowflakeParts decode(String entityKey, long id) {
    if (id < 0) throw new IllegalArgumentException("id must not be negative, got " + id);
    Object a = transport.send("GET", path(entityKey, "/ids/" + id), secret(entityKey), null);
    if (!(a instanceof Map)) throw new IdpoolException("idpool answered a decode without an object");
    Map<?, ?> m = (Map<?, ?>) a;
    try {
      return new SnowflakeParts(
          decimal(m.get("id")),
          (String) m.get("timestamp"),
          (Long) m.get("timestampMs"),
          (int) (long) (Long) m.get("worker"),
          (int) (long) (Long) m.get("timeBack"),
          (Long) m.get("sequence"),
          (int) (long) (Long) m.get("reserved"));
    } catch (ClassCastException | NullPointerException err) {
      throw new IdpoolException("idpool answered a decode of " + id + " in an unknown shape: " + m, err);
    }
  }

  /** Stops leasing; ids still leased are dropped (never handed out). */
  @Override
  public void close() {
    synchronized (leased) {
      for (LeasedIds l : leased.values()) l.close();
    }
    leaser.shutdownNow();
  }

  private String secret(String entityKey) {
    String secret = secrets.get(entityKey);
    if (secret == null) throw new IllegalArgumentException("entity \"" + entityKey + "\" was not configured (builder.entity)");
    return secret;
  }

  private static String path(String entityKey, String rest) {
    return "/apps/" + URLEncoder.encode(entityKey, StandardCharsets.UTF_8) + rest;
  }

  private static long decimal(Object v) {
    if (!(v instanceof String) || !((String) v).matches("\\d{1,19}"))
      throw new IdpoolException("idpool answered an id that is not a decimal string: " + v);
    return Long.parseLong((String) v);
  }

  /** Options, with the TypeScript SDK's defaults. */
  public static final class Builder {
    private final List<String> endpoints = new ArrayList<>();
    private final Map<String, String> secrets = new HashMap<>();
    private long timeoutMs = 2000;
    private long deadlineMs = 15_000;
    private int maxAttempts = 20;
    private long downForMs = 1000;
    private long maxRetryAfterMs = 30_000;
    private double prefetchAt = 0.1;
    private int leaseMinSize = 0;
    private int leaseMaxSize = 10_000_000;
    private long targetSegmentMs = 1000;
    private long leaseWaitMs = 2000;
    private boolean waitOnRateLimit = false;

    private Builder() {}

    /**
     * A 429 {@code rate_limited} waits its {@code Retry-After} and asks again while the deadline
     * allows, instead of throwing {@link IdpoolHttpException.RateLimited} at once. Default off, as
     * the TypeScript SDK.
     */
    public Builder waitOnRateLimit(boolean wait) {
      waitOnRateLimit = wait;
      return this;
    }

    /** Base URLs of idpool instances, e.g. {@code http://idpool-a:8080}; tried in turn on failure. */
    public Builder endpoints(String... urls) {
      endpoints.addAll(Arrays.asList(urls));
      return this;
    }

    /** An entity the client takes ids for, with its secret (from {@code idpool apps create}). */
    public Builder entity(String entityKey, String secret) {
      if (!KEY.matcher(entityKey).matches())
        throw new IllegalArgumentException("entity key \"" + entityKey + "\" must be 1-64 of A-Z a-z 0-9 _ - .");
      if (secret == null || secret.isEmpty())
        throw new IllegalArgumentException("entity \"" + entityKey + "\" needs its secret");
      secrets.put(entityKey, secret);
      return this;
    }

    /** One attempt's time limit. Default 2000 ms. */
    public Builder timeoutMs(long ms) {
      timeoutMs = positive("timeoutMs", ms);
      return this;
    }

    /** Time limit of one call over all its attempts and waits. Default 15000 ms. */
    public Builder deadlineMs(long ms) {
      deadlineMs = positive("deadlineMs", ms);
      return this;
    }

    /** Attempts per call over all endpoints. Default 20. */
    public Builder maxAttempts(int n) {
      maxAttempts = (int) positive("maxAttempts", n);
      return this;
    }

    /** How long an endpoint failing without {@code Retry-After} is skipped; doubles up to 8 s. Default 1000 ms. */
    public Builder downForMs(long ms) {
      if (ms < 0) throw new IllegalArgumentException("downForMs must not be negative");
      downForMs = ms;
      return this;
    }

    /** Longest {@code Retry-After} obeyed. Default 30000 ms. */
    public Builder maxRetryAfterMs(long ms) {
      maxRetryAfterMs = positive("maxRetryAfterMs", ms);
      return this;
    }

    /**
     * Leased segments: {@code minSize} (the first lease and the least; 0 = the entity's step),
     * {@code maxSize} (10M), the share used before the next lease starts (0.1) and the target
     * life of a segment (1000 ms).
     */
    public Builder lease(int minSize, int maxSize, double prefetchAt, long targetSegmentMs) {
      if (minSize < 0 || maxSize < Math.max(minSize, 1))
        throw new IllegalArgumentException("lease sizes must be 0 <= minSize <= maxSize");
      if (!(prefetchAt >= 0 && prefetchAt < 1)) throw new IllegalArgumentException("prefetchAt must be in [0, 1)");
      leaseMinSize = minSize;
      leaseMaxSize = maxSize;
      this.prefetchAt = prefetchAt;
      this.targetSegmentMs = targetSegmentMs;
      return this;
    }

    /** How long {@link LeasedIds#next()} waits when both segments are spent. Default 2000 ms. */
    public Builder leaseWaitMs(long ms) {
      leaseWaitMs = positive("leaseWaitMs", ms);
      return this;
    }

    public IdpoolClient build() {
      return new IdpoolClient(this);
    }

    private static long positive(String name, long v) {
      if (v < 1) throw new IllegalArgumentException(name + " must be positive, got " + v);
      return v;
    }
  }
}
