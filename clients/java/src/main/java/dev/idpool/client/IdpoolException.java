package dev.idpool.client;

/** Base of every exception the client throws. */
public class IdpoolException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public IdpoolException(String message) {
    super(message);
  }

  public IdpoolException(String message, Throwable cause) {
    super(message, cause);
  }
}
