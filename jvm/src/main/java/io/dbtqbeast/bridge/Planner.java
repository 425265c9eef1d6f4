package io.dbtqbeast.bridge;

/**
 * The read planner of the Python engine, as the JVM sees it.
 *
 * <p>Implemented in Python (a Py4J callback object registered with {@link Bridge#setPlanner}); every
 * Qbeast decision (which Delta snapshot, which files a filter or a sample needs, what a sample's
 * row filter is) is taken there. Arguments and results are flat strings (JSON documents), because
 * Py4J turns Java arrays and collections into per-element proxies. Every result is a JSON object;
 * a key {@code "error"} carries a message for the user instead of a result.
 */
public interface Planner {
  /**
   * Resolves a read: the table (location and version) that the options and the catalog schema
   * name, its schema and the row filter of a sample the options ask for.
   *
   * @param optionsJson the data source options (a JSON object of strings)
   * @param catalogSchemaJson the schema the catalog holds for the table (JSON), or "" for a read
   *     by path
   * @return {@code {"table": <opaque JSON string>, "root": <URI>, "schema": <Spark schema JSON>,
   *     "sampleFilter": <SQL text or null>, "description": <text>}}
   */
  String describe(String optionsJson, String catalogSchemaJson);

  /**
   * The files a scan needs.
   *
   * @param tableJson the {@code "table"} string {@link #describe} returned
   * @param filtersJson a JSON array of the scan's data filters as SQL text
   * @param timeZone the session time zone (zone-less timestamp literals are in it)
   * @return {@code {"files": [[<URI>, <bytes to read>, <modification time ms>], ...]}}: the
   *     bytes to read are the file's size or a prefix of it (see {@link PrefixFileIndex})
   */
  String listFiles(String tableJson, String filtersJson, String timeZone);

  /**
   * The row filter that keeps the rows of a sample between two fractions.
   *
   * @return {@code {"sql": <SQL predicate text, or null when the table has no sample>}}
   */
  String sampleFilter(String tableJson, double lowerFraction, double upperFraction);

  /** {@code {"bytes": <total size of the table's files>}} (Spark's size estimate). */
  String tableSize(String tableJson);
}
