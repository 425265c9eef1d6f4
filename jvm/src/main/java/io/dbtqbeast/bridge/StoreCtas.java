package io.dbtqbeast.bridge;

import java.util.Locale;
import java.util.Set;

import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.command.CreateDataSourceTableAsSelectCommand;

/**
 * {@code CREATE TABLE t USING qbeast LOCATION 's3://bucket/t' AS SELECT ...} in a session whose
 * Hadoop has no file system for the location's scheme (a plain {@code pip install pyspark} has
 * none for {@code s3}, {@code s3a}, {@code gs}, {@code abfss}).
 *
 * <p>Why: Spark's command checks through Hadoop that the location is empty before the source
 * sees the rows, and fails with "No FileSystem for scheme", although the engine writes object
 * stores through its own storage layer. This rule, run after Spark's post-hoc rules built the
 * command, makes the same check through the engine ({@link Writer#newTableAt}: the location
 * must hold nothing) and hands Spark the command with the save mode {@code Append}, whose run
 * skips the Hadoop check ({@code ErrorIfExists} and {@code Ignore} make it). The modes differ only
 * when the table exists, and the mode is swapped only when the catalog has no such table: Spark's
 * own command then writes the rows through the source (in mode {@code Overwrite} of the empty
 * location) and creates the catalog entry, as for a local location. Local locations, other
 * sources and existing tables keep Spark's command as it was.
 */
public final class StoreCtas extends Rule<LogicalPlan> {
  /** The schemes of the object stores the engine's storage layer serves. */
  static final Set<String> STORE_SCHEMES = Set.of("s3", "s3a", "gs", "abfss");

  private final SparkSession session;

  public StoreCtas(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "QbeastStoreCtas";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!(plan instanceof CreateDataSourceTableAsSelectCommand)) {
      return plan;
    }
    CreateDataSourceTableAsSelectCommand command = (CreateDataSourceTableAsSelectCommand) plan;
    CatalogTable table = command.table();
    if (command.mode() != SaveMode.ErrorIfExists || !QbeastPathRule.isQbeast(table)
        || !table.storage().locationUri().isDefined()) {
      return plan;
    }
    String scheme = table.storage().locationUri().get().getScheme();
    if (scheme == null || !STORE_SCHEMES.contains(scheme.toLowerCase(Locale.ROOT))
        || session.sessionState().catalog().tableExists(table.identifier())) {
      return plan;
    }
    // refuses (raises the engine's message) when the location holds anything
    Json.answer(Bridge.writer().newTableAt(table.storage().locationUri().get().toString()),
        "newTableAt");
    return command.copy(table, SaveMode.Append, command.query(), command.outputColumnNames());
  }
}
