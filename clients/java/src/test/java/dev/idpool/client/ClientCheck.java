package dev.idpool.client;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The client's checks against a real idpool, run by test/integration/clients.test.ts (which reads
 * the ids written to $OUT and asserts on them) and by bench/clients.bench.ts. The same modes as the
 * Python and Go programs: {@code unique}, {@code failover}, {@code errors}, {@code bench}, {@code
 * spent}.
 * Exit status 0 only when every check here passed.
 */
public final class ClientCheck {
  private static final String[] ENDPOINTS = env("IDPOOL_ENDPOINTS", "").split(",");

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "unique":
        draw(8, 1, true);
        break;
      case "failover":
        draw(4, 2, false);
        break;
      case "errors":
        errors();
        break;
      case "bench":
        bench();
        break;
      case "spent":
        check("spent", ClientCheck::spent);
        break;
      default:
        throw new IllegalArgumentException("mode: unique | failover | errors | bench | spent");
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null ? fallback : v;
  }

  private static IdpoolClient client(String... endpoints) {
    return IdpoolClient.builder()
        .endpoints(endpoints)
        .entity(env("TAKE_KEY", "x"), env("TAKE_SECRET", "x"))
        .entity(env("LEASE_KEY", "y"), env("LEASE_SECRET", "x"))
        .timeoutMs(2000)
        .deadlineMs(30_000)
        .lease(Integer.parseInt(env("LEASE_MIN", "0")), Integer.parseInt(env("LEASE_MAX", "10000000")), 0.1, 1000)
        // Longer than the 2 s default: on a loaded CI machine a lease may take that long.
        .leaseWaitMs(15_000)
        .build();
  }

  /**
   * {@code threads} threads, each taking TAKES batches of 5 over HTTP and LEASED leased ids, per
   * phase; between phases it says {@code phase done} and waits for a line on stdin (the test
   * kills an instance then). Every id goes to $OUT as {@code t <id>} or {@code l <id>}. With
   * {@code spread}, odd threads use a second client that lists the endpoints the other way round
   * (each client asks its first endpoint while it answers), so both instances serve.
   */
  private static void draw(int threads, int phases, boolean spread) throws Exception {
    int takes = Integer.parseInt(env("TAKES", "25"));
    int leasedPerThread = Integer.parseInt(env("LEASED", "20000"));
    String take = env("TAKE_KEY", "");
    ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
    List<Throwable> errors = new CopyOnWriteArrayList<>();
    BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String[] reversed = new String[ENDPOINTS.length];
    for (int k = 0; k < reversed.length; k++) reversed[k] = ENDPOINTS[reversed.length - 1 - k];
    try (IdpoolClient first = client(ENDPOINTS);
        IdpoolClient second = client(spread ? reversed : ENDPOINTS)) {
      IdpoolClient[] clients = {first, second};
      for (int phase = 0; phase < phases; phase++) {
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          IdpoolClient client = clients[spread ? t % 2 : 0];
          LeasedIds leased = client.leased(env("LEASE_KEY", ""));
          leased.open();
          Thread w =
              new Thread(
                  () -> {
                    try {
                      StringBuilder b = new StringBuilder();
                      for (int k = 0; k < takes; k++) for (long id : client.take(take, 5)) b.append("t ").append(id).append('\n');
                      for (int k = 0; k < leasedPerThread; k++) b.append("l ").append(leased.next()).append('\n');
                      lines.add(b.toString());
                    } catch (Throwable err) {
                      errors.add(err);
                    }
                  });
          w.start();
          workers.add(w);
        }
        for (Thread w : workers) w.join();
        if (!errors.isEmpty()) throw new AssertionError("a worker failed", errors.get(0));
        if (phase < phases - 1) {
          System.out.println("phase done");
          System.out.flush();
          if (stdin.readLine() == null) throw new AssertionError("stdin closed before the go-on line");
        }
      }
      try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(env("OUT", "ids.txt"))))) {
        for (String chunk : lines) out.print(chunk);
      }
      String lease = env("LEASE_KEY", "");
      System.out.println("leases " + (first.leased(lease).leases() + (spread ? second.leased(lease).leases() : 0)));
    }
    System.out.println("done");
  }

  private static void errors() throws Exception {
    String take = env("TAKE_KEY", "");
    String limited = env("LIMITED_KEY", "");
    String flake = env("FLAKE_KEY", "");
    IdpoolClient client =
        IdpoolClient.builder()
            .endpoints(ENDPOINTS)
            .entity(take, env("TAKE_SECRET", ""))
            .entity(limited, env("LIMITED_SECRET", ""))
            .entity(flake, env("FLAKE_SECRET", ""))
            .entity("wrong-secret", "not-the-secret")
            .entity(take + "-nosuch", "whatever")
            .build();
    IdpoolClient wrong = IdpoolClient.builder().endpoints(ENDPOINTS).entity(take, "not-the-secret").build();
    check("unauthorized", () -> expectHttp(() -> wrong.take(take, 1), IdpoolHttpException.Unauthorized.class, 401, "unauthorized"));
    // An unknown entity is 401 as a wrong secret is: the service does not say which keys exist.
    check("unknown_entity", () -> expectHttp(() -> client.take(take + "-nosuch", 1), IdpoolHttpException.Unauthorized.class, 401, "unauthorized"));
    check("decode_refused", () -> expectHttp(() -> client.decode(take, 1), IdpoolHttpException.InvalidRequest.class, 400, "invalid_request"));
    check("conflict", () -> expectHttp(() -> client.leased(take).next(), IdpoolHttpException.Conflict.class, 409, "conflict"));
    check("invalid_request", () -> expectHttp(() -> client.take(take, 1_000_000_000), IdpoolHttpException.InvalidRequest.class, 400, "invalid_request"));
    check(
        "rate_limited",
        () -> {
          IdpoolHttpException e = null;
          for (int k = 0; k < 5 && e == null; k++) {
            try {
              client.take(limited, 10);
            } catch (IdpoolHttpException err) {
              e = err;
            }
          }
          assertHttp(e, IdpoolHttpException.RateLimited.class, 429, "rate_limited");
          if (e.retryAfterMs() < 0) throw new AssertionError("429 without Retry-After");
        });
    check(
        "decode",
        () -> {
          long id = client.next(flake);
          SnowflakeParts parts = client.decode(flake, id);
          if (parts.id != id) throw new AssertionError("decoded " + parts.id + " for " + id);
          if (Math.abs(parts.timestampMs - System.currentTimeMillis()) > 60_000)
            throw new AssertionError("timestamp " + parts.timestamp + " is not now");
        });
    check("retry_after", () -> retryAfter(503, "pool_exhausted", false));
    check("rate_limit_wait", () -> retryAfter(429, "rate_limited", true));
    check("unavailable", ClientCheck::unavailable);
    check("last_answer", ClientCheck::lastAnswer);
    check("one_key", ClientCheck::oneKey);
    check("lease_waits", ClientCheck::leaseWaits);
    check("numbers", ClientCheck::numbers);
    check("leased_default_trend", ClientCheck::leasedDefaultTrend);
    check("gapless", ClientCheck::gapless);
    System.out.println("done");
  }

  /**
   * A gapless series through GAPLESS_ENDPOINTS, whose first endpoint drops the answer to each new
   * Idempotency-Key (the test's proxy: the service issued the numbers, the client never heard): the
   * retry on the next endpoint carries the same key and is answered the numbers already issued. Then
   * the caller's own key twice: the same numbers; with another reference, 409. Prints {@code gapless
   * <reference> <number>} for the test, which reads the ledger.
   */
  private static void gapless() {
    String key = env("GAPLESS_KEY", "");
    IdpoolClient c =
        IdpoolClient.builder()
            .endpoints(env("GAPLESS_ENDPOINTS", "").split(","))
            .entity(key, env("GAPLESS_SECRET", ""))
            .build();
    String[] first = c.takeNumbers(key, 2, "inv-java-1");
    String mine = "java-" + UUID.randomUUID();
    String[] second = c.takeNumbers(key, 1, "inv-java-2", mine);
    String[] again = c.takeNumbers(key, 1, "inv-java-2", mine);
    if (!Arrays.equals(second, again))
      throw new AssertionError("the same key answered " + Arrays.toString(again) + " after " + Arrays.toString(second));
    expectHttp(
        () -> c.takeNumbers(key, 1, "inv-java-3", mine), IdpoolHttpException.Conflict.class, 409, "conflict");
    for (String n : first) System.out.println("gapless inv-java-1 " + n);
    for (String n : second) System.out.println("gapless inv-java-2 " + n);
  }

  /**
   * A business-number entity: takeNumbers answers its numbers as strings; take (long ids) refuses
   * them with BusinessNumberException holding the numbers it took. Each number is printed as
   * {@code number <n>} for the test, which checks them over every language.
   */
  private static void numbers() {
    String key = env("NUMBER_KEY", "");
    IdpoolClient c = IdpoolClient.builder().endpoints(ENDPOINTS).entity(key, env("NUMBER_SECRET", "")).build();
    List<String> all = new ArrayList<>(Arrays.asList(c.takeNumbers(key, 3)));
    all.add(c.nextNumber(key));
    try {
      c.take(key, 2);
      throw new AssertionError("take of a business-number entity answered long ids");
    } catch (BusinessNumberException err) {
      if (err.numbers().size() != 2 || !err.getMessage().contains("takeNumbers"))
        throw new AssertionError("unclear: " + err.getMessage() + " " + err.numbers());
      all.addAll(err.numbers());
    }
    for (String n : all) System.out.println("number " + n);
  }

  /**
   * Leased ids of a trend entity registered with the defaults (5,000 a second): the leases double
   * past what the entity allows a second (429) and at once (400); next() waits and goes on.
   */
  private static void leasedDefaultTrend() {
    String key = env("TREND_KEY", "");
    try (IdpoolClient c =
        IdpoolClient.builder().endpoints(ENDPOINTS).entity(key, env("TREND_SECRET", "")).leaseWaitMs(15_000).build()) {
      LeasedIds leased = c.leased(key);
      long previous = -1;
      for (int k = 0; k < 12_000; k++) {
        long id = leased.next();
        if (id == previous) throw new AssertionError("id " + id + " twice");
        previous = id;
      }
      System.out.println("trend leases " + leased.leases());
    }
  }

  /**
   * One endpoint answers 500 with the service's JSON error, the other refuses connections: the final
   * error leads with the answer (status, code, message), whichever endpoint was asked last.
   */
  private static void lastAnswer() throws IOException {
    HttpServer stub =
        stub(ex -> new Answer(500, "{\"error\":{\"code\":\"internal\",\"message\":\"broken codec\"}}"));
    try {
      IdpoolClient c =
          IdpoolClient.builder()
              .endpoints("http://127.0.0.1:" + stub.getAddress().getPort(), "http://127.0.0.1:" + deadPort())
              .entity("e", "s")
              .downForMs(50)
              .deadlineMs(1500)
              .build();
      try {
        c.next("e");
        throw new AssertionError("no exception");
      } catch (IdpoolUnavailableException err) {
        assertHttp(err.lastAnswer(), IdpoolHttpException.class, 500, "internal");
        if (!err.getMessage().contains("last answer: ") || !err.getMessage().contains("500 internal: broken codec"))
          throw new AssertionError("the message hides the answer: " + err.getMessage());
      }
    } finally {
      stub.stop(0);
    }
  }

  /** A port nothing listens on: bound, then closed. */
  private static int deadPort() throws IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      return s.getLocalPort();
    }
  }

  /**
   * One take over two endpoints meeting a 500, a refused connection and a 503 still in progress
   * (Retry-After: 1) before its answer: every attempt carries the one Idempotency-Key.
   */
  private static void oneKey() throws IOException {
    List<String> keys = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger calls = new AtomicInteger();
    HttpServer stub =
        stub(
            ex -> {
              keys.add(ex.getRequestHeaders().getFirst("Idempotency-Key"));
              int call = calls.getAndIncrement();
              if (call == 0) return new Answer(500, "{\"error\":{\"code\":\"internal\",\"message\":\"x\"}}");
              if (call == 1) {
                ex.getResponseHeaders().add("Retry-After", "1");
                return new Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"still in progress\"}}");
              }
              return new Answer(200, "{\"ids\":[\"INV20261129-000001\"]}");
            });
    try {
      IdpoolClient c =
          IdpoolClient.builder()
              .endpoints("http://127.0.0.1:" + deadPort(), "http://127.0.0.1:" + stub.getAddress().getPort())
              .entity("e", "s")
              .downForMs(50)
              .build();
      String n = c.nextNumber("e");
      if (!n.equals("INV20261129-000001")) throw new AssertionError("number " + n);
      if (keys.size() != 3 || keys.get(0) == null || new java.util.HashSet<>(keys).size() != 1)
        throw new AssertionError("idempotency keys " + keys);
    } finally {
      stub.stop(0);
    }
  }

  /** A lease answered 429, then 503, each with Retry-After: 1: leased().next() waits them out and hands out the id. */
  private static void leaseWaits() throws IOException {
    AtomicInteger calls = new AtomicInteger();
    HttpServer stub =
        stub(
            ex -> {
              int call = calls.getAndIncrement();
              if (call < 2) {
                ex.getResponseHeaders().add("Retry-After", "1");
                return call == 0
                    ? new Answer(429, "{\"error\":{\"code\":\"rate_limited\",\"message\":\"wait\"}}")
                    : new Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"wait\"}}");
              }
              return new Answer(200, "{\"first\":\"7\",\"last\":\"10\",\"count\":4,\"delta\":1,\"remainder\":0}");
            });
    try (IdpoolClient c =
        IdpoolClient.builder()
            .endpoints("http://127.0.0.1:" + stub.getAddress().getPort())
            .entity("e", "s")
            .leaseWaitMs(5000)
            .build()) {
      long id = c.leased("e").next();
      if (id != 7) throw new AssertionError("id " + id);
    } finally {
      stub.stop(0);
    }
  }

  /**
   * A local server answers {@code status} with Retry-After: 1, then 200: the client waits a second
   * and retries with the same Idempotency-Key (a 429 only with waitOnRateLimit).
   */
  private static void retryAfter(int status, String code, boolean waitOnRateLimit) throws IOException {
    List<String> keys = Collections.synchronizedList(new ArrayList<>());
    List<Long> times = Collections.synchronizedList(new ArrayList<>());
    HttpServer stub =
        stub(
            ex -> {
              keys.add(ex.getRequestHeaders().getFirst("Idempotency-Key"));
              times.add(System.nanoTime());
              if (keys.size() > 1) return new Answer(200, "{\"ids\":[\"9223372036854775807\"]}");
              ex.getResponseHeaders().add("Retry-After", "1");
              return new Answer(status, "{\"error\":{\"code\":\"" + code + "\",\"message\":\"wait\"}}");
            });
    try {
      IdpoolClient c =
          IdpoolClient.builder()
              .endpoints("http://127.0.0.1:" + stub.getAddress().getPort())
              .entity("e", "s")
              .waitOnRateLimit(waitOnRateLimit)
              .build();
      long id = c.next("e");
      if (id != Long.MAX_VALUE) throw new AssertionError("id " + id);
      if (keys.size() != 2 || keys.get(0) == null || !keys.get(0).equals(keys.get(1)))
        throw new AssertionError("idempotency keys " + keys);
      long waited = (times.get(1) - times.get(0)) / 1_000_000;
      if (waited < 950) throw new AssertionError("retried after " + waited + " ms, before Retry-After: 1");
    } finally {
      stub.stop(0);
    }
  }

  /** Every endpoint failing: IdpoolUnavailableException with each attempt, the last carrying the service's code. */
  private static void unavailable() throws IOException {
    AtomicInteger seen = new AtomicInteger();
    HttpServer stub =
        stub(
            ex -> {
              seen.incrementAndGet();
              return new Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"down\"}}");
            });
    try {
      IdpoolClient c =
          IdpoolClient.builder()
              .endpoints("http://127.0.0.1:" + stub.getAddress().getPort())
              .entity("e", "s")
              .downForMs(100)
              .deadlineMs(1500)
              .build();
      try {
        c.next("e");
        throw new AssertionError("no exception");
      } catch (IdpoolUnavailableException err) {
        if (err.attempts().size() < 2 || err.attempts().size() != seen.get())
          throw new AssertionError(err.attempts().size() + " attempts, " + seen.get() + " requests");
        assertHttp(err.lastError(), IdpoolHttpException.class, 503, "unavailable");
      }
    } finally {
      stub.stop(0);
    }
  }

  private static final class Answer {
    final int status;
    final String body;

    Answer(int status, String body) {
      this.status = status;
      this.body = body;
    }
  }

  private interface Handler {
    Answer handle(com.sun.net.httpserver.HttpExchange ex);
  }

  /** A local HTTP server on a spare port answering every request as {@code handler} says. */
  private static HttpServer stub(Handler handler) throws IOException {
    HttpServer stub = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    stub.createContext(
        "/",
        ex -> {
          Answer answer = handler.handle(ex);
          byte[] body = answer.body.getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(answer.status, body.length);
          try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
          }
        });
    stub.start();
    return stub;
  }

  /**
   * One client over both instances: SPENT_KEY's period is taken until the service answers 503
   * period_exhausted; then each take of it ends at once (one attempt, under a second), and TAKE_KEY
   * through the same client is answered at once: one entity's refusal marks no endpoint down.
   */
  private static void spent() {
    String key = env("SPENT_KEY", "");
    String other = env("TAKE_KEY", "");
    try (IdpoolClient c =
        IdpoolClient.builder()
            .endpoints(ENDPOINTS)
            .entity(key, env("SPENT_SECRET", ""))
            .entity(other, env("TAKE_SECRET", ""))
            .build()) {
      for (int k = 0; ; k++) {
        if (k == 20) throw new AssertionError("no period_exhausted after 20 takes");
        try {
          System.out.println("number " + c.nextNumber(key));
        } catch (IdpoolUnavailableException err) {
          if (!err.refused() || !"period_exhausted".equals(err.lastAnswer().code())) throw err;
          break;
        }
      }
      for (int k = 0; k < 3; k++) {
        long start = System.nanoTime();
        try {
          c.nextNumber(key);
          throw new AssertionError("a spent period handed out a number");
        } catch (IdpoolUnavailableException err) {
          long tookMs = (System.nanoTime() - start) / 1_000_000;
          if (!err.refused() || err.attempts().size() != 1 || tookMs >= 1000)
            throw new AssertionError(err.getMessage() + " after " + err.attempts().size() + " attempts, " + tookMs + " ms");
        }
      }
      long start = System.nanoTime();
      c.next(other);
      long tookMs = (System.nanoTime() - start) / 1_000_000;
      if (tookMs >= 1000) throw new AssertionError("another entity waited " + tookMs + " ms");
      System.out.println("other " + tookMs + " ms");
    }
  }

  private static void bench() throws Exception {
    long perRun = Long.parseLong(env("BENCH_IDS", "200000000"));
    try (IdpoolClient client = client(ENDPOINTS)) {
      LeasedIds leased = client.leased(env("LEASE_KEY", ""));
      leased.open();
      for (String spec : env("BENCH_THREADS", "1").split(",")) {
        int threads = Integer.parseInt(spec);
        for (int round = 0; round < 2; round++) { // the first round warms the JIT up; the second is reported
          long[] sinks = new long[threads];
          List<Thread> workers = new ArrayList<>();
          long each = perRun / threads;
          long t0 = System.nanoTime();
          for (int t = 0; t < threads; t++) {
            int slot = t;
            Thread w =
                new Thread(
                    () -> {
                      long sum = 0;
                      for (long k = 0; k < each; k++) sum += leased.next();
                      sinks[slot] = sum;
                    });
            w.start();
            workers.add(w);
          }
          for (Thread w : workers) w.join();
          double seconds = (System.nanoTime() - t0) / 1e9;
          long sink = 0;
          for (long s : sinks) sink ^= s;
          if (round == 1)
            System.out.printf(
                "{\"lang\":\"java\",\"threads\":%d,\"ids\":%d,\"seconds\":%.3f,\"perSecond\":%.0f,\"leases\":%d,\"sink\":%d}%n",
                threads, each * threads, seconds, each * threads / seconds, leased.leases(), sink & 1);
        }
      }
    }
  }

  private interface Check {
    void run() throws Exception;
  }

  private static void check(String name, Check c) {
    try {
      c.run();
      System.out.println("ok " + name);
    } catch (Throwable err) {
      System.out.println("FAIL " + name + ": " + err);
      err.printStackTrace(System.out);
      System.exit(1);
    }
  }

  private static void expectHttp(Runnable call, Class<?> type, int status, String code) {
    try {
      call.run();
    } catch (IdpoolHttpException err) {
      assertHttp(err, type, status, code);
      return;
    }
    throw new AssertionError("no exception; expected " + status + " " + code);
  }

  private static void assertHttp(IdpoolException err, Class<?> type, int status, String code) {
    if (!type.isInstance(err)) throw new AssertionError("expected " + type.getSimpleName() + ", got " + err);
    IdpoolHttpException h = (IdpoolHttpException) err;
    if (h.status() != status || !h.code().equals(code))
      throw new AssertionError("expected " + status + " " + code + ", got " + h.status() + " " + h.code());
  }
}
