package io.dbtqbeast.bridge;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * The writer of the Python engine, as the JVM sees it: SQL and DataFrame writes to the
 * {@code qbeast} source are handed to it.
 *
 * <p>Implemented in Python (a Py4J callback object registered with {@link Bridge#setWriter}) by
 * the same process that implements the {@link Planner}: every layout decision (revision, cubes,
 * files, the commit) is taken there; this side only passes the statement's rows and options.
 */
public interface Writer {
  /**
   * Writes {@code data} to the table the options name.
   *
   * @param optionsJson the write's options (a JSON object of strings; {@code path} is the
   *     table's location, a catalog table's {@code LOCATION} or its warehouse folder)
   * @param mode Spark's save mode name ({@code Append}, {@code Overwrite}, {@code ErrorIfExists},
   *     {@code Ignore})
   * @param data the rows to write
   * @return {@code {"written": <description>}}, or {@code {"error": <message for the user>}}
   */
  String write(String optionsJson, String mode, Dataset<Row> data);

  /**
   * Checks that a new table may be created at {@code location}: nothing is there (no table, no
   * file). Spark makes this check through Hadoop for a {@code CREATE TABLE ... AS SELECT}; for an
   * object store without a Hadoop connector the engine's storage makes it ({@link StoreCtas}).
   *
   * @return {@code {"empty": true}}, or {@code {"error": <message naming the location>}}
   */
  String newTableAt(String location);
}
