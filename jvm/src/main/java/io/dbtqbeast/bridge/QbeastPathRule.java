package io.dbtqbeast.bridge;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedDataSource;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap$;

/**
 * Path queries, {@code SELECT ... FROM qbeast.`/data/events`}: the reference becomes exactly what
 * {@code spark.read.format("qbeast").load("/data/events")} builds, so it is planned by the engine
 * like any other read of the table (pruning, {@code TABLESAMPLE}, options given with
 * {@code WITH (...)}), and {@code INSERT INTO / INSERT OVERWRITE qbeast.`/data/events`} is the
 * engine's write to the table, as for a catalog table.
 *
 * <p>Why a rule of its own, run with the analyzer's first (hint) rules: Spark resolves such
 * references in {@code ResolveSQLOnFile}, which admits file formats only and fails for any other
 * source before a later rule could see the reference. Only a two-part name whose first part is
 * {@code qbeast} and whose second looks like a location (an absolute path or a URI) is taken, so a
 * database called {@code qbeast} keeps resolving its tables.
 */
public final class QbeastPathRule extends Rule<LogicalPlan> {
  static final String FORMAT = "qbeast";

  private final SparkSession session;

  public QbeastPathRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "QbeastPathRule";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.resolveOperatorsUp(Scala.partial(this::rewrite));
  }

  private LogicalPlan rewrite(LogicalPlan node) {
    if (node instanceof InsertIntoStatement) {
      // the target of an INSERT is a field of the statement, not one of its children
      // and the rule that resolves a source (ResolveDataSource) only visits children: the
      // target is resolved here, as a read of the path, whose relation Spark's insert planning
      // takes (and the bridge's optimizer rule turns into the engine's write)
      InsertIntoStatement insert = (InsertIntoStatement) node;
      LogicalPlan target = insert.table() instanceof UnresolvedRelation
          ? rewriteRelation((UnresolvedRelation) insert.table()) : null;
      if (target == null) {
        return null;
      }
      UnresolvedDataSource source = (UnresolvedDataSource) target;
      target = ((org.apache.spark.sql.classic.Dataset<?>) session.read().format(FORMAT)
          .options(source.options()).load(source.paths().head())).queryExecution().analyzed();
      Object[] fields = Scala.list(insert.productIterator().toSeq()).toArray();
      fields[0] = target;
      return insert.makeCopy(fields);
    }
    return node instanceof UnresolvedRelation ? rewriteRelation((UnresolvedRelation) node) : null;
  }

  private static LogicalPlan rewriteRelation(UnresolvedRelation relation) {
    String path = pathQuery(Scala.list(relation.multipartIdentifier()));
    if (path == null) {
      return null;
    }
    // the path goes in `paths` only: resolving the source adds it to the options, as a read's
    // load(path) does
    Map<String, String> options = new HashMap<>(relation.options().asCaseSensitiveMap());
    // Spark's own markers (an INSERT's `__required_write_privileges__`) are not the user's
    options.keySet().removeIf(key -> key.startsWith("__"));
    return new UnresolvedDataSource(
        FORMAT,
        scala.Option.empty(),
        CaseInsensitiveMap$.MODULE$.apply(Scala.immutableMap(options)),
        relation.isStreaming(),
        Scala.seq(List.of(path)));
  }

  /** The location a name {@code qbeast.`<location>`} reads, or null for any other name. */
  static String pathQuery(List<String> parts) {
    return parts.size() == 2 && FORMAT.equals(parts.get(0).toLowerCase(Locale.ROOT))
        && isLocation(parts.get(1)) ? parts.get(1) : null;
  }

  /** Whether a catalog table's provider is {@code qbeast}. */
  static boolean isQbeast(CatalogTable table) {
    return table.provider().isDefined() && FORMAT.equalsIgnoreCase(table.provider().get());
  }

  /** An absolute path, or a URI with a scheme ({@code s3://...}, {@code file:/...}). */
  static boolean isLocation(String name) {
    if (name.startsWith("/")) {
      return true;
    }
    int colon = name.indexOf(':');
    return colon > 0 && name.substring(0, colon).matches("[A-Za-z][A-Za-z0-9+.-]*")
        && name.length() > colon + 1 && name.charAt(colon + 1) == '/';
  }
}
