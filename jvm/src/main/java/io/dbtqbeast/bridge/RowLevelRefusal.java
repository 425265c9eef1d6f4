package io.dbtqbeast.bridge;

import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedDataSource;
import org.apache.spark.sql.catalyst.plans.logical.UpdateTable;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * {@code DELETE FROM}, {@code UPDATE} and {@code MERGE INTO} on a table whose provider is
 * {@code qbeast} (or a path query {@code qbeast.`/data/events`}) are refused with one line that
 * names the {@code CALL qbeast_system.*} procedure doing the same change.
 *
 * <p>Why: Spark's grammar gives these statements to V2 tables only, and a {@code qbeast} table is
 * a V1 source, so Spark fails them late with a generic "does not support DELETE" that sends the
 * user to the catalog's configuration. Run with the analyzer's first rules, before that
 * happens; any other table is left to Spark. The bridge knows the provider's name, nothing of
 * the format.
 */
public final class RowLevelRefusal extends Rule<LogicalPlan> {
  private final SparkSession session;

  public RowLevelRefusal(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "QbeastRowLevelRefusal";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    String statement;
    String procedure;
    LogicalPlan target;
    if (plan instanceof DeleteFromTable) {
      statement = "DELETE FROM";
      procedure = "delete(table => '%s', condition => '...')";
      target = ((DeleteFromTable) plan).table();
    } else if (plan instanceof UpdateTable) {
      statement = "UPDATE";
      procedure = "update(table => '%s', set => map('column', 'expression'), condition => '...')";
      target = ((UpdateTable) plan).table();
    } else if (plan instanceof MergeIntoTable) {
      statement = "MERGE INTO";
      procedure = "merge(table => '%s', source => 'a query or table', on => 'key columns')";
      target = ((MergeIntoTable) plan).targetTable();
    } else {
      return plan;
    }
    while (target instanceof SubqueryAlias) {
      target = ((SubqueryAlias) target).child();
    }
    String table = null;
    if (target instanceof UnresolvedDataSource) {  // a path query, as QbeastPathRule made it
      UnresolvedDataSource source = (UnresolvedDataSource) target;
      if (QbeastPathRule.FORMAT.equalsIgnoreCase(source.format()) && source.paths().size() == 1) {
        table = source.paths().head();
      }
    } else if (target instanceof UnresolvedRelation) {
      table = qbeastTable(Scala.list(((UnresolvedRelation) target).multipartIdentifier()));
    }
    if (table == null) {
      return plan;
    }
    throw new UnsupportedOperationException(String.format(
        "%s on the qbeast table %s does not run in Spark SQL (a qbeast table is a V1 source); "
            + "the same change is CALL qbeast_system." + procedure
            + " (docs/operations.md#the-operations-in-sql)",
        statement, table, table));
  }

  /** The name to put in the procedure call, or null when the table is not a qbeast table. */
  private String qbeastTable(List<String> parts) {
    String path = QbeastPathRule.pathQuery(parts);
    if (path != null) {
      return path;
    }
    if (parts.isEmpty() || parts.size() > 2) {
      return null;
    }
    TableIdentifier id = parts.size() == 1
        ? new TableIdentifier(parts.get(0))
        : new TableIdentifier(parts.get(1), scala.Option.apply(parts.get(0)));
    try {
      if (!session.sessionState().catalog().tableExists(id)) {
        return null;
      }
      if (QbeastPathRule.isQbeast(session.sessionState().catalog().getTableMetadata(id))) {
        return String.join(".", parts);
      }
    } catch (Exception notFound) {
      // a temporary view, another catalog's name: Spark's own answer
    }
    return null;
  }
}
