package io.dbtqbeast.bridge;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTable;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.AddColumns;
import org.apache.spark.sql.catalyst.plans.logical.Assignment;
import org.apache.spark.sql.catalyst.plans.logical.DefaultValueExpression;
import org.apache.spark.sql.catalyst.plans.logical.DeleteAction;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.InsertStarAction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeAction;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.QualifiedColType;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedDataSource;
import org.apache.spark.sql.catalyst.plans.logical.UpdateAction;
import org.apache.spark.sql.catalyst.plans.logical.UpdateStarAction;
import org.apache.spark.sql.catalyst.plans.logical.UpdateTable;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.types.DataTypes;

/**
 * {@code DELETE FROM} and {@code UPDATE} on a table whose provider is {@code qbeast} (or a path
 * query {@code qbeast.`/data/events`}) run as the engine's row-level operations: the statement
 * becomes {@code CALL qbeast_system.delete(...)} / {@code update(...)} with the statement's
 * condition and assignments as SQL text; {@code MERGE INTO} of the upsert's shapes becomes
 * {@code CALL qbeast_system.merge(...)}, other shapes are refused naming what runs.
 * {@code ALTER TABLE ... ADD COLUMNS} becomes {@code CALL qbeast_system.add_columns(...)} (Spark's
 * own refusal named the source's Java object).
 *
 * <p>Why a rewrite: Spark's grammar gives these statements to V2 tables only, and a {@code qbeast}
 * table is a V1 source, so Spark fails them late with a generic "does not support DELETE". Run
 * with the analyzer's first rules, before that happens; any other table is left to Spark. The
 * bridge knows the provider's name and the procedures' names, nothing of the format: the engine
 * parses the texts against the table as the procedures do for any SQL client.
 */
public final class RowLevelStatements extends Rule<LogicalPlan> {
  private final SparkSession session;

  public RowLevelStatements(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "QbeastRowLevelStatements";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    LogicalPlan target;
    if (plan instanceof DeleteFromTable) {
      target = ((DeleteFromTable) plan).table();
    } else if (plan instanceof UpdateTable) {
      target = ((UpdateTable) plan).table();
    } else if (plan instanceof MergeIntoTable) {
      target = ((MergeIntoTable) plan).targetTable();
    } else if (plan instanceof AddColumns && ((AddColumns) plan).table() instanceof UnresolvedTable) {
      String table = qbeastTable(Scala.list(((UnresolvedTable) ((AddColumns) plan).table()).multipartIdentifier()));
      return table == null ? plan : addColumns(table, Scala.list(((AddColumns) plan).columnsToAdd()));
    } else {
      return plan;
    }
    String alias = null;
    while (target instanceof SubqueryAlias) {
      alias = ((SubqueryAlias) target).alias();
      target = ((SubqueryAlias) target).child();
    }
    String table = null;
    List<String> nameParts = new ArrayList<>();
    if (target instanceof UnresolvedDataSource) {  // a path query, as QbeastPathRule made it
      UnresolvedDataSource source = (UnresolvedDataSource) target;
      if (QbeastPathRule.FORMAT.equalsIgnoreCase(source.format()) && source.paths().size() == 1) {
        table = source.paths().head();
      }
    } else if (target instanceof UnresolvedRelation) {
      nameParts = Scala.list(((UnresolvedRelation) target).multipartIdentifier());
      table = qbeastTable(nameParts);
    }
    if (table == null) {
      return plan;
    }
    String statement = plan instanceof DeleteFromTable ? "DELETE FROM"
        : plan instanceof UpdateTable ? "UPDATE" : "MERGE INTO";
    if (!Bridge.proceduresInstalled()) {
      throw new UnsupportedOperationException(String.format(
          "%s on the qbeast table %s runs as the engine's procedure CALL qbeast_system.%s, and this "
              + "driver offers no SQL procedures: call qbeast.enable_sql_procedures(spark) in the "
              + "driver's Python process (qbeast serve and the dbt adapter do)",
          statement, table, statement.equals("DELETE FROM") ? "delete" : statement.equals("UPDATE") ? "update" : "merge"));
    }
    List<String> qualifiers = new ArrayList<>();
    if (alias != null) {
      qualifiers.add(alias);
    } else if (!nameParts.isEmpty()) {
      qualifiers.add(nameParts.get(nameParts.size() - 1));
    }
    if (plan instanceof MergeIntoTable) {
      return merge((MergeIntoTable) plan, table, qualifiers);
    }
    StringBuilder call = new StringBuilder("CALL qbeast_system.");
    if (plan instanceof DeleteFromTable) {
      call.append("delete(table => ").append(literal(table));
      String condition = conditionText(((DeleteFromTable) plan).condition(), qualifiers);
      if (condition != null) {
        call.append(", condition => ").append(literal(condition));
      }
    } else {
      UpdateTable update = (UpdateTable) plan;
      call.append("update(table => ").append(literal(table)).append(", set => map(");
      String separator = "";
      for (Assignment assignment : Scala.list(update.assignments())) {
        call.append(separator).append(literal(columnName(assignment.key(), qualifiers)))
            .append(", ").append(literal(text(assignment.value(), qualifiers)));
        separator = ", ";
      }
      call.append(")");
      if (update.condition().isDefined()) {
        String condition = conditionText(update.condition().get(), qualifiers);
        if (condition != null) {
          call.append(", condition => ").append(literal(condition));
        }
      }
    }
    call.append(")");
    return parse(call.toString(), table);
  }

  private LogicalPlan parse(String call, String table) {
    try {
      return session.sessionState().sqlParser().parsePlan(call);
    } catch (ParseException unexpected) {
      throw new IllegalStateException("qbeast bridge: the procedure call for " + table
          + " does not parse: " + call, unexpected);
    }
  }

  /**
   * {@code ALTER TABLE ... ADD COLUMNS} as {@code CALL qbeast_system.add_columns(...)}: nullable
   * top-level columns at the end of the schema (what a Delta table gains from a schema change;
   * every existing row reads null), so a position, a nested field, {@code NOT NULL} and a default
   * other than {@code NULL} are refused by name.
   */
  private LogicalPlan addColumns(String table, List<QualifiedColType> columns) {
    String statement = "ALTER TABLE ... ADD COLUMNS on the qbeast table " + table;
    if (!Bridge.proceduresInstalled()) {
      throw new UnsupportedOperationException(statement + " runs as the engine's procedure CALL "
          + "qbeast_system.add_columns, and this driver offers no SQL procedures: call "
          + "qbeast.enable_sql_procedures(spark) in the driver's Python process (qbeast serve and "
          + "the dbt adapter do)");
    }
    StringBuilder ddl = new StringBuilder();
    for (QualifiedColType column : columns) {
      String refused = null;
      if (column.path().isDefined()) {
        refused = "a nested field";
      } else if (column.position().isDefined()) {
        refused = "a position (FIRST / AFTER): new columns go at the end";
      } else if (!column.nullable()) {
        refused = "NOT NULL: the existing rows hold null in a new column";
      } else if (!defaultIsNull(column)) {
        refused = "a DEFAULT other than NULL";
      }
      if (refused != null) {
        throw new UnsupportedOperationException(statement + ": column " + column.colName()
            + " has " + refused + "; a qbeast table adds nullable columns at the end of its schema");
      }
      if (ddl.length() > 0) {
        ddl.append(", ");
      }
      ddl.append('`').append(column.colName().replace("`", "``")).append("` ")
          .append(CharVarcharUtils.replaceCharVarcharWithString(column.dataType()).sql());
      if (column.comment().isDefined()) {
        ddl.append(" COMMENT ").append(literal(column.comment().get()));
      }
    }
    return parse("CALL qbeast_system.add_columns(table => " + literal(table) + ", columns => "
        + literal(ddl.toString()) + ")", table);
  }

  /**
   * {@code MERGE INTO} as {@code CALL qbeast_system.merge(...)}: the source (a table or the text
   * of its query), the key columns when the ON condition compares columns of the same name, else
   * the condition over the procedure's aliases {@code target} and {@code source}; at most one
   * {@code WHEN MATCHED} clause ({@code UPDATE SET *}, {@code UPDATE SET c = s.c, ...} or
   * {@code DELETE}) and one {@code WHEN NOT MATCHED THEN INSERT *}, without conditions. Anything
   * else is refused naming what runs.
   */
  private LogicalPlan merge(MergeIntoTable merge, String table, List<String> targetQualifiers) {
    LogicalPlan source = merge.sourceTable();
    List<String> sourceQualifiers = new ArrayList<>();
    if (source instanceof SubqueryAlias) {
      sourceQualifiers.add(((SubqueryAlias) source).alias());
      source = ((SubqueryAlias) source).child();
    }
    String sourceText;
    if (source instanceof UnresolvedRelation) {
      List<String> parts = Scala.list(((UnresolvedRelation) source).multipartIdentifier());
      sourceQualifiers.add(parts.get(parts.size() - 1));
      StringBuilder name = new StringBuilder();
      for (String part : parts) {
        name.append(name.length() > 0 ? "." : "").append('`').append(part.replace("`", "``")).append('`');
      }
      sourceText = name.toString();
    } else {
      sourceText = originalText(source);
    }
    if (sourceText == null) {
      throw refusedMerge(table, "its source is neither a table nor a query");
    }
    String keys = keyColumns(merge.mergeCondition(), targetQualifiers, sourceQualifiers);
    String on = keys != null ? keys : renamed(merge.mergeCondition(), targetQualifiers, sourceQualifiers);
    String whenMatched = "NULL";
    String updateColumns = "NULL";
    List<MergeAction> matched = Scala.list(merge.matchedActions());
    if (matched.size() > 1 || (matched.size() == 1 && matched.get(0).condition().isDefined())) {
      throw refusedMerge(table, "it has a WHEN MATCHED clause with a condition, or several");
    }
    if (matched.size() == 1) {
      MergeAction action = matched.get(0);
      if (action instanceof DeleteAction) {
        whenMatched = literal("delete");
      } else if (action instanceof UpdateStarAction) {
        whenMatched = literal("update");
      } else {
        whenMatched = literal("update");
        List<String> columns = new ArrayList<>();
        for (Assignment assignment : Scala.list(((UpdateAction) action).assignments())) {
          String column = columnName(assignment.key(), targetQualifiers);
          Expression value = assignment.value();
          List<String> parts = value instanceof UnresolvedAttribute
              ? Scala.list(((UnresolvedAttribute) value).nameParts()) : List.of();
          if (parts.size() != 2 || !matches(parts.get(0), sourceQualifiers)
              || !parts.get(1).equalsIgnoreCase(column)) {
            throw refusedMerge(table, "its UPDATE SET gives " + column + " another value than the "
                + "source's column of that name");
          }
          columns.add(column);
        }
        updateColumns = literal(String.join(",", columns));
      }
    }
    String whenNotMatched = "NULL";
    List<MergeAction> notMatched = Scala.list(merge.notMatchedActions());
    if (notMatched.size() > 1 || (notMatched.size() == 1
        && (notMatched.get(0).condition().isDefined() || !(notMatched.get(0) instanceof InsertStarAction)))) {
      throw refusedMerge(table, "its WHEN NOT MATCHED clause is not one INSERT * without a condition");
    }
    if (notMatched.size() == 1) {
      whenNotMatched = literal("insert");
    }
    if (!Scala.list(merge.notMatchedBySourceActions()).isEmpty()) {
      throw refusedMerge(table, "it has a WHEN NOT MATCHED BY SOURCE clause");
    }
    return parse("CALL qbeast_system.merge(table => " + literal(table) + ", source => "
        + literal(sourceText) + ", on => " + literal(on) + ", when_matched => " + whenMatched
        + ", when_not_matched => " + whenNotMatched + ", update_columns => " + updateColumns + ")", table);
  }

  private static UnsupportedOperationException refusedMerge(String table, String why) {
    return new UnsupportedOperationException(String.format(
        "MERGE INTO on the qbeast table %s does not run: %s. A qbeast table merges with one WHEN "
            + "MATCHED clause (UPDATE SET *, UPDATE SET c = s.c, ... or DELETE) and one WHEN NOT "
            + "MATCHED THEN INSERT *, without conditions; CALL qbeast_system.merge(table => '%s', "
            + "source => 'a query or table', on => 'key columns') does the same "
            + "(docs/operations.md#the-operations-in-sql)", table, why, table));
  }

  /** The text the parser read for {@code plan} (a source query), or null when it has none. */
  private static String originalText(LogicalPlan plan) {
    scala.Option<String> text = plan.origin().sqlText();
    scala.Option<Object> start = plan.origin().startIndex();
    scala.Option<Object> stop = plan.origin().stopIndex();
    if (text.isEmpty() || start.isEmpty() || stop.isEmpty()) {
      return null;
    }
    int from = (Integer) start.get();
    int to = (Integer) stop.get();
    return from >= 0 && to < text.get().length() && from <= to ? text.get().substring(from, to + 1) : null;
  }

  /** {@code "a,b"} when the condition is {@code t.a = s.a AND t.b = s.b} (either side first),
   * else null. */
  private static String keyColumns(Expression condition, List<String> target, List<String> source) {
    List<String> keys = new ArrayList<>();
    List<Expression> pending = new ArrayList<>(List.of(condition));
    while (!pending.isEmpty()) {
      Expression e = pending.remove(0);
      if (e instanceof And) {
        pending.add(((And) e).left());
        pending.add(((And) e).right());
        continue;
      }
      if (!(e instanceof EqualTo) || !(((EqualTo) e).left() instanceof UnresolvedAttribute)
          || !(((EqualTo) e).right() instanceof UnresolvedAttribute)) {
        return null;
      }
      List<String> left = Scala.list(((UnresolvedAttribute) ((EqualTo) e).left()).nameParts());
      List<String> right = Scala.list(((UnresolvedAttribute) ((EqualTo) e).right()).nameParts());
      if (left.size() != 2 || right.size() != 2 || !left.get(1).equalsIgnoreCase(right.get(1))) {
        return null;
      }
      boolean ordered = matches(left.get(0), target) && matches(right.get(0), source);
      boolean swapped = matches(left.get(0), source) && matches(right.get(0), target);
      if (!ordered && !swapped) {
        return null;
      }
      keys.add(left.get(1));
    }
    return String.join(",", keys);
  }

  /** The condition as text over the procedure's aliases {@code target} and {@code source}. */
  private static String renamed(Expression condition, List<String> target, List<String> source) {
    return condition.transformUp(Scala.partial((Expression e) -> {
      if (e instanceof UnresolvedAttribute) {
        List<String> parts = Scala.list(((UnresolvedAttribute) e).nameParts());
        if (parts.size() == 2 && matches(parts.get(0), target)) {
          return new UnresolvedAttribute(Scala.seq(List.of("target", parts.get(1))));
        }
        if (parts.size() == 2 && matches(parts.get(0), source)) {
          return new UnresolvedAttribute(Scala.seq(List.of("source", parts.get(1))));
        }
      }
      return null;
    })).sql();
  }

  /** The condition as SQL text, or null for "every row" (no WHERE, or WHERE true). */
  private static String conditionText(Expression condition, List<String> qualifiers) {
    if (condition instanceof Literal && Boolean.TRUE.equals(((Literal) condition).value())
        && DataTypes.BooleanType.equals(condition.dataType())) {
      return null;
    }
    return text(condition, qualifiers);
  }

  /** An expression as SQL text, its column references without the table's name or alias (the
   * engine evaluates the text against the table alone). */
  private static String text(Expression expression, List<String> qualifiers) {
    Expression unqualified = expression.transformUp(Scala.partial((Expression e) -> {
      if (e instanceof UnresolvedAttribute) {
        List<String> parts = Scala.list(((UnresolvedAttribute) e).nameParts());
        if (parts.size() == 2 && matches(parts.get(0), qualifiers)) {
          return new UnresolvedAttribute(Scala.seq(parts.subList(1, 2)));
        }
      }
      return null;
    }));
    return unqualified.sql();
  }

  private static String columnName(Expression key, List<String> qualifiers) {
    if (key instanceof UnresolvedAttribute) {
      List<String> parts = Scala.list(((UnresolvedAttribute) key).nameParts());
      if (parts.size() == 1 || (parts.size() == 2 && matches(parts.get(0), qualifiers))) {
        return parts.get(parts.size() - 1);
      }
    }
    throw new UnsupportedOperationException(
        "UPDATE on a qbeast table sets top-level columns of the table; not " + key.sql());
  }

  /** True when the column has no DEFAULT or {@code DEFAULT NULL}. (Its accessor is named
   * {@code default}, a Java keyword: read as the case class's field of that name.) */
  private static boolean defaultIsNull(QualifiedColType column) {
    for (int i = 0; i < column.productArity(); i++) {
      if ("default".equals(column.productElementName(i))) {
        scala.Option<?> value = (scala.Option<?>) column.productElement(i);
        return value.isEmpty()
            || "null".equalsIgnoreCase(((DefaultValueExpression) value.get()).originalSQL().trim());
      }
    }
    throw new IllegalStateException("qbeast bridge: this Spark's QualifiedColType has no default field");
  }

  private static boolean matches(String qualifier, List<String> qualifiers) {
    for (String q : qualifiers) {
      if (q.toLowerCase(Locale.ROOT).equals(qualifier.toLowerCase(Locale.ROOT))) {
        return true;
      }
    }
    return false;
  }

  /** A SQL string literal of {@code value} (backslash escapes, Spark's default). */
  private static String literal(String value) {
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'";
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
