package dev.idpool.client;

/** Both leased segments are used up and the next lease did not arrive within {@code leaseWait}. */
public final class LeaseNotReadyException extends IdpoolException {
  private static final long serialVersionUID = 1L;

  LeaseNotReadyException(String message) {
    super(message);
  }
}
