package dev.idpool.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A 503 about one entity never marks an endpoint down (docs/clients.md "Failover"), checked
 * against two local fake instances; run by test/integration/clients.test.ts:
 *
 * <pre>java -cp CLASSES dev.idpool.client.EntityRefusalsCheck</pre>
 *
 * Prints {@code ok NAME} per check; exit status 0 only when every check passed.
 */
public final class EntityRefusalsCheck {
  private EntityRefusalsCheck() {}

  /** Answers takes and leases as an idpool instance would: 503 codes scripted per entity, else ids. */
  private static final class FakeInstance {
    final Map<String, Deque<String>> refuse = new HashMap<>();
    final List<String> asked = Collections.synchronizedList(new ArrayList<>());
    final HttpServer server;
    long next;

    FakeInstance(long firstId) throws IOException {
      next = firstId;
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/", this::answer);
      server.start();
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    void refuse(String entity, String... codes) {
      synchronized (this) {
        refuse.put(entity, new ArrayDeque<>(java.util.Arrays.asList(codes)));
      }
    }

    private void answer(HttpExchange ex) throws IOException {
      ex.getRequestBody().readAllBytes();
      String path = ex.getRequestURI().getPath();
      String entity = path.split("/")[2];
      String code;
      long id;
      synchronized (this) {
        asked.add(entity);
        Deque<String> codes = refuse.get(entity);
        code = codes == null ? null : codes.poll();
        id = ++next;
      }
      String body;
      int status = 200;
      if (code != null) {
        status = 503;
        String retryAfter =
            "period_exhausted".equals(code) ? "3461" : code.equals("entity_held") || code.startsWith("gapless") ? "60" : "1";
        ex.getResponseHeaders().set("Retry-After", retryAfter);
        body = "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + entity + ": refused\"}}";
      } else if (path.endsWith("/segments")) {
        body = "{\"first\":\"" + id + "\",\"last\":\"" + id + "\",\"count\":1,\"delta\":1,\"remainder\":0}";
      } else {
        body = "{\"ids\":[\"" + id + "\"]}";
      }
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "application/json");
      ex.sendResponseHeaders(status, bytes.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(bytes);
      }
    }
  }

  private interface Check {
    void run(FakeInstance a, FakeInstance b, IdpoolClient client) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    check("period_exhausted_blocks_no_other_entity", EntityRefusalsCheck::periodExhausted);
    check("entity_held_ends_at_once", (a, b, c) -> endsAtOnce(a, b, c, "entity_held"));
    check("gapless_ledger_behind_ends_at_once", (a, b, c) -> endsAtOnce(a, b, c, "gapless_ledger_behind"));
    check("pool_exhausted_waits_alone", EntityRefusalsCheck::poolExhausted);
    check("lease_refusals", EntityRefusalsCheck::leaseRefusals);
  }

  private static void check(String name, Check c) throws Exception {
    FakeInstance a = new FakeInstance(0);
    FakeInstance b = new FakeInstance(1000);
    try (IdpoolClient client =
        IdpoolClient.builder()
            .endpoints(a.url(), b.url())
            .entity("receipts", "r")
            .entity("orders", "o")
            .entity("trendy", "t")
            .lease(1, 1, 0.1, 1000)
            .build()) {
      c.run(a, b, client);
      System.out.println("ok " + name);
    } catch (Throwable err) {
      System.out.println("FAIL " + name + ": " + err);
      err.printStackTrace(System.out);
      System.exit(1);
    } finally {
      a.server.stop(0);
      b.server.stop(0);
    }
  }

  private static void require(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  private static IdpoolUnavailableException refusal(Runnable call) {
    try {
      call.run();
    } catch (IdpoolUnavailableException err) {
      require(err.refused(), "not marked refused: " + err.getMessage());
      return err;
    }
    throw new AssertionError("no exception");
  }

  private static void periodExhausted(FakeInstance a, FakeInstance b, IdpoolClient client) {
    String[] spent = new String[20];
    java.util.Arrays.fill(spent, "period_exhausted");
    a.refuse("receipts", spent);
    b.refuse("receipts", spent);
    for (int k = 0; k < 20; k++) {
      IdpoolUnavailableException err = refusal(() -> client.takeNumbers("receipts", 1));
      require(err.attempts().size() == 1, err.attempts().size() + " attempts");
      IdpoolHttpException answer = err.lastAnswer();
      require(
          answer.status() == 503 && "period_exhausted".equals(answer.code()) && answer.retryAfterMs() == 3_461_000,
          "last answer " + answer.getMessage() + " retry after " + answer.retryAfterMs());
      String lead = "idpool unavailable: " + answer.endpoint() + ": 503 period_exhausted: receipts: refused";
      require(err.getMessage().startsWith(lead), "message " + err.getMessage());
    }
    long start = System.nanoTime();
    client.next("orders");
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    require(tookMs < 500, "another entity waited " + tookMs + " ms");
    require(a.asked.size() + b.asked.size() == 21, a.asked + " " + b.asked);
  }

  private static void endsAtOnce(FakeInstance a, FakeInstance b, IdpoolClient client, String code) {
    a.refuse("receipts", code);
    b.refuse("receipts", code);
    IdpoolUnavailableException err = refusal(() -> client.next("receipts"));
    require(code.equals(err.lastAnswer().code()), err.getMessage());
    client.next("orders");
    require(a.asked.equals(java.util.Arrays.asList("receipts", "orders")), a.asked + " " + b.asked);
  }

  private static void poolExhausted(FakeInstance a, FakeInstance b, IdpoolClient client) {
    a.refuse("receipts", "pool_exhausted");
    long start = System.nanoTime();
    client.next("receipts");
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    require(tookMs >= 900, "pool_exhausted not waited out: " + tookMs + " ms");
    require(a.asked.size() == 1 && b.asked.size() == 1, a.asked + " " + b.asked);
    // A was never marked down: it answers another entity at once when B is the one refusing.
    b.refuse("orders", "unavailable");
    start = System.nanoTime();
    client.next("orders");
    tookMs = (System.nanoTime() - start) / 1_000_000;
    require(tookMs < 500 && a.asked.size() == 2, tookMs + " ms; " + a.asked + " " + b.asked);
  }

  private static void leaseRefusals(FakeInstance a, FakeInstance b, IdpoolClient client) throws IOException {
    a.refuse("trendy", "pool_exhausted");
    client.leased("trendy").next();
    FakeInstance c = new FakeInstance(5000);
    try (IdpoolClient other =
        IdpoolClient.builder().endpoints(c.url()).entity("trendy", "t").lease(1, 1, 0.1, 1000).build()) {
      c.refuse("trendy", "period_exhausted", "period_exhausted");
      long start = System.nanoTime();
      refusal(() -> other.leased("trendy").next());
      long tookMs = (System.nanoTime() - start) / 1_000_000;
      require(tookMs < 500 && c.asked.size() == 1, tookMs + " ms; " + c.asked);
    } finally {
      c.server.stop(0);
    }
  }
}
