package io.dbtqbeast.bridge;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * The shared secret a server started with one requires from every client, compared in constant
 * time. It comes from the environment of the driver's process ({@value #VARIABLE}), set by the
 * Python side before it starts the JVM: an environment variable stays out of Spark's
 * configuration, which clients can list. A server whose variable is empty accepts nobody.
 */
final class SharedSecret {
  static final String VARIABLE = "QBEAST_SERVE_TOKEN";

  private static final byte[] EXPECTED = load();

  private SharedSecret() {
  }

  private static byte[] load() {
    String value = System.getenv(VARIABLE);
    return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
  }

  /** Whether {@code given} is the server's secret (never true when the server has none). */
  static boolean matches(String given) {
    if (given == null || EXPECTED.length == 0) {
      return false;
    }
    return MessageDigest.isEqual(EXPECTED, given.getBytes(StandardCharsets.UTF_8));
  }
}
