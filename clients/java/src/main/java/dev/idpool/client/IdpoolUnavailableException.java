package dev.idpool.client;

import java.util.Collections;
import java.util.List;

/**
 * Every attempt failed (network errors, timeouts, 5xx) or the deadline came first, or ({@link
 * #refused()}) the service refused the entity alone, alike on every instance (503 {@code
 * period_exhausted}, {@code entity_held}): asked once, no endpoint marked down. {@link
 * #attempts()} holds each failure in order; {@link #lastAnswer()} the last answer a service gave
 * (status, code, message), which the message leads with: an endpoint that answered 503 says more
 * than another one that refused connections after it.
 */
public final class IdpoolUnavailableException extends IdpoolException {
  private static final long serialVersionUID = 1L;
  private final List<IdpoolException> attempts;
  private final boolean refused;

  IdpoolUnavailableException(String reason, List<IdpoolException> attempts) {
    this(reason, attempts, false);
  }

  IdpoolUnavailableException(String reason, List<IdpoolException> attempts, boolean refused) {
    super(
        message(reason, attempts, refused),
        lastAnswer(attempts) != null ? lastAnswer(attempts) : last(attempts));
    this.attempts = Collections.unmodifiableList(attempts);
    this.refused = refused;
  }

  /** Whether the answer concerns the entity alone, alike on every instance: asked once, no endpoint marked down. */
  public boolean refused() {
    return refused;
  }

  public List<IdpoolException> attempts() {
    return attempts;
  }

  /** The final failure, or null when no attempt was made. */
  public IdpoolException lastError() {
    return last(attempts);
  }

  /** The last error answer of a service among the attempts, or null when none answered. */
  public IdpoolHttpException lastAnswer() {
    return lastAnswer(attempts);
  }

  private static String message(String reason, List<IdpoolException> attempts, boolean refused) {
    IdpoolException last = last(attempts);
    IdpoolHttpException answer = lastAnswer(attempts);
    if (refused && answer != null)
      return "idpool unavailable: " + answer.getMessage() + " (the same on every instance: not asked again)";
    return "idpool unavailable: "
        + reason
        + (answer == null ? "" : "; last answer: " + answer.getMessage())
        + (last == null || last == answer ? "" : "; last error: " + last.getMessage());
  }

  private static IdpoolException last(List<IdpoolException> attempts) {
    return attempts.isEmpty() ? null : attempts.get(attempts.size() - 1);
  }

  private static IdpoolHttpException lastAnswer(List<IdpoolException> attempts) {
    for (int k = attempts.size() - 1; k >= 0; k--)
      if (attempts.get(k) instanceof IdpoolHttpException) return (IdpoolHttpException) attempts.get(k);
    return null;
  }
}
