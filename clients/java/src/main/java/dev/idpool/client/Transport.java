package dev.idpool.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * One logical request with failover, as the TypeScript SDK does it: network errors, timeouts and
 * 5xx move on to the next endpoint (one that said {@code Retry-After} is not asked again before
 * then; one failing without it is skipped for {@code downFor}, doubling up to 8 s); 4xx, 429
 * included, go straight back to the caller, unless {@code waitOnRateLimit} makes a 429 wait its
 * {@code Retry-After} within the deadline. A 503 about one entity never marks an endpoint down:
 * {@code period_exhausted} and {@code entity_held} end the call at once ({@link
 * IdpoolUnavailableException#refused()}), {@code pool_exhausted} waits its {@code Retry-After} for
 * this request only. Every attempt of one POST carries the same {@code Idempotency-Key}, so a retry
 * after a timeout gets the ids the first attempt took.
 */
final class Transport {
  /** Longest back-off of a failing endpoint: a dead one costs one connection attempt per 8 s. */
  private static final long MAX_BACKOFF_MS = 8000;

  private static final class Endpoint {
    final String url;
    /** Not asked again before this time (ms since the client started). */
    volatile long notBefore;
    /** Failures in a row, for the back-off. */
    int streak;

    Endpoint(String url) {
      this.url = url;
    }
  }

  private final Endpoint[] endpoints;
  private final HttpClient http;
  private final long timeoutMs;
  private final long deadlineMs;
  private final int maxAttempts;
  private final long downForMs;
  private final long maxRetryAfterMs;
  private final boolean waitOnRateLimit;
  private final long origin = System.nanoTime();
  /** The endpoint that answered last; the next request starts there. Guarded by this. */
  private int current;

  Transport(
      List<String> urls,
      long timeoutMs,
      long deadlineMs,
      int maxAttempts,
      long downForMs,
      long maxRetryAfterMs,
      boolean waitOnRateLimit) {
    endpoints = new Endpoint[urls.size()];
    for (int k = 0; k < endpoints.length; k++) endpoints[k] = new Endpoint(urls.get(k).replaceAll("/+$", ""));
    this.timeoutMs = timeoutMs;
    this.deadlineMs = deadlineMs;
    this.maxAttempts = maxAttempts;
    this.downForMs = downForMs;
    this.maxRetryAfterMs = maxRetryAfterMs;
    this.waitOnRateLimit = waitOnRateLimit;
    http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofMillis(timeoutMs))
            .build();
  }

  private long now() {
    return (System.nanoTime() - origin) / 1_000_000;
  }

  /** Whether a 429 is waited out (the builder's {@code waitOnRateLimit}). */
  boolean waitsOnRateLimit() {
    return waitOnRateLimit;
  }

  /** Sends {@code method path} (with a JSON {@code body} when not null) and returns the parsed 2xx answer. */
  Object send(String method, String path, String secret, String body) {
    return send(method, path, secret, body, waitOnRateLimit);
  }

  /** As {@link #send(String, String, String, String)}, a 429 waited out when {@code waitOnRateLimit}. */
  Object send(String method, String path, String secret, String body, boolean waitOnRateLimit) {
    return send(method, path, secret, body, waitOnRateLimit, null);
  }

  /**
   * As {@link #send(String, String, String, String, boolean)}, every attempt carrying {@code
   * idempotencyKey} (the caller's), or a new one for this call when null.
   */
  Object send(String method, String path, String secret, String body, boolean waitOnRateLimit, String idempotencyKey) {
    long deadline = now() + deadlineMs;
    if (body != null && idempotencyKey == null) idempotencyKey = UUID.randomUUID().toString();
    List<IdpoolException> failures = new ArrayList<>();
    for (int attempt = 0; attempt < maxAttempts; attempt++) {
      Endpoint endpoint;
      int index;
      synchronized (this) {
        index = pick();
        endpoint = endpoints[index];
      }
      long wait = endpoint.notBefore - now();
      if (wait > 0) {
        if (now() + wait >= deadline)
          throw new IdpoolUnavailableException(
              "no endpoint may be asked again within the " + deadlineMs + " ms deadline", failures);
        sleep(wait);
      }
      long left = deadline - now();
      if (left <= 0) break;
      try {
        Object answer = attempt(endpoint, method, path, secret, body, idempotencyKey, Math.min(timeoutMs, left));
        synchronized (this) {
          endpoint.notBefore = 0;
          endpoint.streak = 0;
          current = index;
        }
        return answer;
      } catch (IdpoolHttpException err) {
        if (err.status() == 429 && waitOnRateLimit && err.retryAfterMs() >= 0 && now() + err.retryAfterMs() < deadline) {
          // Opted in: the entity's limit holds on every instance, so wait it out here and ask again.
          failures.add(err);
          sleep(err.retryAfterMs());
          continue;
        }
        if (err.status() < 500) throw err;
        if (err.status() == 503 && isEntityRefusal(err.code())) {
          // About this entity alone and the same on every instance: the call ends, the endpoint stays up.
          failures.add(err);
          throw new IdpoolUnavailableException(err.code() + " holds on every instance", failures, true);
        }
        if (err.status() == 503 && "pool_exhausted".equals(err.code())) {
          // One entity's pool is short: wait for this request only, then ask the next endpoint in turn.
          failures.add(err);
          long poolWait = err.retryAfterMs() >= 0 ? err.retryAfterMs() : downForMs;
          if (now() + poolWait >= deadline)
            throw new IdpoolUnavailableException(
                "its Retry-After ends past the " + deadlineMs + " ms deadline", failures);
          synchronized (this) {
            current = (index + 1) % endpoints.length;
          }
          sleep(poolWait);
          continue;
        }
        failed(failures, endpoint, index, err, err.retryAfterMs());
      } catch (IdpoolException err) {
        failed(failures, endpoint, index, err, -1);
      }
    }
    throw new IdpoolUnavailableException(
        failures.size() >= maxAttempts ? failures.size() + " attempts failed" : "deadline of " + deadlineMs + " ms passed",
        failures);
  }

  private synchronized void failed(
      List<IdpoolException> failures, Endpoint endpoint, int index, IdpoolException err, long retryAfterMs) {
    failures.add(err);
    endpoint.streak++;
    // The server's Retry-After is obeyed as given; without one, an endpoint that keeps failing
    // is skipped for longer each time while another one may answer.
    long backoff = Math.min(downForMs << Math.min(endpoint.streak - 1, 20), MAX_BACKOFF_MS);
    endpoint.notBefore = now() + (retryAfterMs >= 0 ? retryAfterMs : backoff);
    current = (index + 1) % endpoints.length;
  }

  /** The first endpoint, in turn from the current one, that may be asked now; else the one free soonest. */
  private int pick() {
    long now = now();
    int soonest = current;
    for (int k = 0; k < endpoints.length; k++) {
      int index = (current + k) % endpoints.length;
      if (endpoints[index].notBefore <= now) return index;
      if (endpoints[index].notBefore < endpoints[soonest].notBefore) soonest = index;
    }
    return soonest;
  }

  private Object attempt(
      Endpoint endpoint, String method, String path, String secret, String body, String idempotencyKey, long timeout) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(endpoint.url + path))
            .timeout(Duration.ofMillis(timeout))
            .header("Authorization", "Bearer " + secret)
            .header("Accept", "application/json");
    if (body != null) {
      request
          .header("Content-Type", "application/json")
          .header("Idempotency-Key", idempotencyKey)
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    } else {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    }
    HttpResponse<String> res;
    try {
      res = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (HttpTimeoutException err) {
      throw new IdpoolException(endpoint.url + ": no answer within " + timeout + " ms", err);
    } catch (IOException err) {
      throw new IdpoolException(endpoint.url + ": " + err, err);
    } catch (InterruptedException err) {
      Thread.currentThread().interrupt();
      throw new IdpoolException("interrupted", err);
    }
    Object parsed;
    try {
      parsed = res.body().isEmpty() ? null : Json.parse(res.body());
    } catch (IllegalArgumentException err) {
      parsed = null;
    }
    int status = res.statusCode();
    if (status >= 200 && status < 300) {
      if (parsed == null) throw new IdpoolException(endpoint.url + ": answer " + status + " is not JSON");
      return parsed;
    }
    String code = "http_" + status;
    String message = res.body().isEmpty() ? "no message" : res.body().substring(0, Math.min(200, res.body().length()));
    if (parsed instanceof Map && ((Map<?, ?>) parsed).get("error") instanceof Map) {
      Map<?, ?> error = (Map<?, ?>) ((Map<?, ?>) parsed).get("error");
      if (error.get("code") instanceof String) code = (String) error.get("code");
      if (error.get("message") instanceof String) message = (String) error.get("message");
    }
    // A refusal's Retry-After is never waited for here: the caller gets it as said (the next period may be an hour off).
    long retryAfter =
        retryAfterMs(
            res.headers().firstValue("Retry-After").orElse(null),
            isEntityRefusal(code) ? Long.MAX_VALUE : maxRetryAfterMs);
    throw IdpoolHttpException.of(status, code, message, endpoint.url, retryAfter);
  }

  /**
   * A 503 code about one entity that every instance answers alike (its period's numbers are spent;
   * it is held): the call ends at once and no endpoint is marked down.
   */
  static boolean isEntityRefusal(String code) {
    return "period_exhausted".equals(code) || "entity_held".equals(code) || "gapless_ledger_behind".equals(code);
  }

  /** {@code Retry-After} as ms: delta-seconds or an HTTP date; capped; -1 when absent or unreadable. */
  static long retryAfterMs(String value, long cap) {
    if (value == null) return -1;
    String v = value.trim();
    long ms;
    if (v.matches("\\d{1,9}")) ms = Long.parseLong(v) * 1000;
    else {
      try {
        ms =
            ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli()
                - System.currentTimeMillis();
      } catch (RuntimeException err) {
        return -1;
      }
    }
    return Math.min(Math.max(ms, 0), cap);
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException err) {
      Thread.currentThread().interrupt();
      throw new IdpoolException("interrupted", err);
    }
  }
}
