import dev.idpool.client.IdpoolClient;
import dev.idpool.client.IdpoolHttpException;
import dev.idpool.client.LeasedIds;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The Java client at each door of the matrix (test/matrix/run.ts): for each entity of
 * $MATRIX_ENTITIES (key=secret;…) a take of $TAKE ids (business numbers, with takeNumbers, for the
 * keys of $MATRIX_NUMBERS), then $LEASED leased ids, one line each on
 * stdout: {@code ids KEY DOOR ID…}, {@code refused KEY DOOR STATUS CODE} (the service's answer), or
 * {@code error KEY DOOR MESSAGE} (anything else the client threw). The same protocol as the Python
 * and Go drivers beside it.
 */
public final class MatrixDriver {
  public static void main(String[] args) {
    Map<String, String> entities = new LinkedHashMap<>();
    for (String e : System.getenv("MATRIX_ENTITIES").split(";")) {
      int eq = e.indexOf('=');
      entities.put(e.substring(0, eq), e.substring(eq + 1));
    }
    String listed = System.getenv("MATRIX_NUMBERS");
    Set<String> numbers = new HashSet<>(Arrays.asList((listed == null ? "" : listed).split(",")));
    int take = Integer.parseInt(System.getenv("TAKE"));
    int leased = Integer.parseInt(System.getenv("LEASED"));
    // A 5 s deadline: a cell waiting longer fails (issue 45).
    IdpoolClient.Builder builder =
        IdpoolClient.builder().endpoints(System.getenv("MATRIX_URL")).deadlineMs(5000).leaseWaitMs(5000);
    entities.forEach(builder::entity);
    try (IdpoolClient c = builder.build()) {
      for (String key : entities.keySet()) {
        if (numbers.contains(key)) answer(key, "take", () -> c.takeNumbers(key, take));
        else answer(key, "take", () -> Arrays.stream(c.take(key, take)).mapToObj(Long::toString).toArray(String[]::new));
        answer(
            key,
            "leased",
            () -> {
              LeasedIds ids = c.leased(key);
              String[] out = new String[leased];
              for (int i = 0; i < leased; i++) out[i] = Long.toString(ids.next());
              return out;
            });
      }
    }
  }

  private static void answer(String key, String door, Callable<String[]> call) {
    try {
      StringBuilder line = new StringBuilder("ids ").append(key).append(' ').append(door);
      for (String id : call.call()) line.append(' ').append(id);
      System.out.println(line);
    } catch (IdpoolHttpException err) {
      System.out.println("refused " + key + " " + door + " " + err.status() + " " + err.code());
    } catch (Exception err) {
      System.out.println("error " + key + " " + door + " " + String.valueOf(err).replace('\n', ' '));
    }
    System.out.flush();
  }
}
