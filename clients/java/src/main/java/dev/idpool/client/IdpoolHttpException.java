package dev.idpool.client;

/**
 * The service answered with an error status. {@link #code()} is the service's stable error code
 * (the JSON {@code error.code}: {@code invalid_request}, {@code unauthorized}, {@code not_found},
 * {@code conflict}, {@code rate_limited}, {@code pool_exhausted}, {@code unavailable}, …).
 */
public class IdpoolHttpException extends IdpoolException {
  private static final long serialVersionUID = 1L;
  private final int status;
  private final String code;
  private final String endpoint;
  private final long retryAfterMs;

  public IdpoolHttpException(int status, String code, String message, String endpoint, long retryAfterMs) {
    super(endpoint + ": " + status + " " + code + ": " + message);
    this.status = status;
    this.code = code;
    this.endpoint = endpoint;
    this.retryAfterMs = retryAfterMs;
  }

  /** HTTP status. */
  public int status() {
    return status;
  }

  /** The service's error code, e.g. {@code invalid_request}; {@code http_<status>} when the body had none. */
  public String code() {
    return code;
  }

  /** Base URL of the endpoint that answered. */
  public String endpoint() {
    return endpoint;
  }

  /** From {@code Retry-After} (capped); -1 when the answer had none. */
  public long retryAfterMs() {
    return retryAfterMs;
  }

  /** 400: a malformed request (bad count, key or size). */
  public static final class InvalidRequest extends IdpoolHttpException {
    private static final long serialVersionUID = 1L;

    InvalidRequest(int s, String c, String m, String e, long r) {
      super(s, c, m, e, r);
    }
  }

  /** 401: the entity's secret is wrong (or was rotated). */
  public static final class Unauthorized extends IdpoolHttpException {
    private static final long serialVersionUID = 1L;

    Unauthorized(int s, String c, String m, String e, long r) {
      super(s, c, m, e, r);
    }
  }

  /** 404: no such entity. */
  public static final class NotFound extends IdpoolHttpException {
    private static final long serialVersionUID = 1L;

    NotFound(int s, String c, String m, String e, long r) {
      super(s, c, m, e, r);
    }
  }

  /** 409: e.g. a lease asked of a monotonic entity. */
  public static final class Conflict extends IdpoolHttpException {
    private static final long serialVersionUID = 1L;

    Conflict(int s, String c, String m, String e, long r) {
      super(s, c, m, e, r);
    }
  }

  /** 429: the entity's ids-per-second limit; {@link #retryAfterMs()} says when to try again. Not retried. */
  public static final class RateLimited extends IdpoolHttpException {
    private static final long serialVersionUID = 1L;

    RateLimited(int s, String c, String m, String e, long r) {
      super(s, c, m, e, r);
    }
  }

  /** The typed exception for an error answer. */
  static IdpoolHttpException of(int status, String code, String message, String endpoint, long retryAfterMs) {
    switch (status) {
      case 400:
        return new InvalidRequest(status, code, message, endpoint, retryAfterMs);
      case 401:
        return new Unauthorized(status, code, message, endpoint, retryAfterMs);
      case 404:
        return new NotFound(status, code, message, endpoint, retryAfterMs);
      case 409:
        return new Conflict(status, code, message, endpoint, retryAfterMs);
      case 429:
        return new RateLimited(status, code, message, endpoint, retryAfterMs);
      default:
        return new IdpoolHttpException(status, code, message, endpoint, retryAfterMs);
    }
  }
}
