package dev.idpool.client;

import java.util.Collections;
import java.util.List;

/**
 * {@link IdpoolClient#take} was answered with ids that are not 64-bit integers: the entity issues
 * business numbers (registered with a {@code format}, e.g. {@code INV20261129-000304}). The service
 * has handed them out, so they are here, in {@link #numbers()}, for the caller to use or record;
 * take them with {@link IdpoolClient#takeNumbers} from now on.
 */
public final class BusinessNumberException extends IdpoolException {
  private static final long serialVersionUID = 1L;
  private final String entityKey;
  private final List<String> numbers;

  BusinessNumberException(String entityKey, List<String> numbers) {
    super(
        "entity \""
            + entityKey
            + "\" answered "
            + (numbers.isEmpty() ? "no ids" : "\"" + numbers.get(0) + "\"")
            + ", not a 64-bit integer id: it issues business numbers; take them with takeNumbers(\""
            + entityKey
            + "\", count) (the "
            + numbers.size()
            + " taken are in numbers())");
    this.entityKey = entityKey;
    this.numbers = Collections.unmodifiableList(numbers);
  }

  /** The entity whose take answered them. */
  public String entityKey() {
    return entityKey;
  }

  /** The numbers the service handed out for this take, in its order: they are not handed out again. */
  public List<String> numbers() {
    return numbers;
  }
}
