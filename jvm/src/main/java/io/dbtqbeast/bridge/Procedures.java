package io.dbtqbeast.bridge;

/**
 * The table operations of the Python engine that SQL can call, as the JVM sees them.
 *
 * <p>Implemented in Python (a Py4J callback object registered with {@link Bridge#setProcedures});
 * {@link QbeastProcedures} offers them as Spark 4 stored procedures ({@code CALL}). Arguments and
 * results are JSON documents; a key {@code "error"} carries a message for the user.
 */
public interface Procedures {
  /**
   * What can be called: {@code {"procedures": [{"name": ..., "description": ..., "parameters":
   * [{"name": ..., "type": "string" | "long" | "double" | "boolean" | "map" (string to string), "default": <SQL text or
   * null when required>}]}]}}.
   */
  String catalog();

  /**
   * Runs one procedure.
   *
   * @param name the procedure's name
   * @param argumentsJson a JSON object from parameter name to value (null for a SQL NULL)
   * @param session the Spark session of the statement (its catalog resolves table names)
   * @return {@code {"columns": [{"name": ..., "type": ...}], "rows": [[...], ...]}}
   */
  String call(String name, String argumentsJson, Object session);
}
