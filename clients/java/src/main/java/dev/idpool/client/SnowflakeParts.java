package dev.idpool.client;

/** A snowflake id explained by the service ({@code GET /apps/:key/ids/:id}). */
public final class SnowflakeParts {
  public final long id;
  /** Start of the id's time unit, ISO 8601. */
  public final String timestamp;
  public final long timestampMs;
  public final int worker;
  public final int timeBack;
  public final long sequence;
  public final int reserved;

  SnowflakeParts(long id, String timestamp, long timestampMs, int worker, int timeBack, long sequence, int reserved) {
    this.id = id;
    this.timestamp = timestamp;
    this.timestampMs = timestampMs;
    this.worker = worker;
    this.timeBack = timeBack;
    this.sequence = sequence;
    this.reserved = reserved;
  }

  @Override
  public String toString() {
    return "SnowflakeParts{id=" + id + ", timestamp=" + timestamp + ", worker=" + worker + ", timeBack=" + timeBack
        + ", sequence=" + sequence + ", reserved=" + reserved + "}";
  }
}
