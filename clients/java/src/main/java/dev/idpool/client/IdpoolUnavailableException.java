package dev.idpool.client;

import java.util.Collections;
import java.util.List;

/**
 * Every attempt failed (network errors, timeouts, 5xx) or the deadline came first. {@link
 * #attempts()} holds each failure in order.
 */
public final class IdpoolUnavailableException extends IdpoolException {
  private static final long serialVersionUID = 1L;
  private final List<IdpoolException> attempts;

  IdpoolUnavailableException(String reason, List<IdpoolException> attempts) {
    super(
        "idpool unavailable: "
            + reason
            + (attempts.isEmpty() ? "" : "; last error: " + attempts.get(attempts.size() - 1).getMessage()),
        attempts.isEmpty() ? null : attempts.get(attempts.size() - 1));
    this.attempts = Collections.unmodifiableList(attempts);
  }

  public List<IdpoolException> attempts() {
    return attempts;
  }

  /** The final failure, or null when no attempt was made. */
  public IdpoolException lastError() {
    return attempts.isEmpty() ? null : attempts.get(attempts.size() - 1);
  }
}
