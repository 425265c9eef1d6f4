package io.dbtqbeast.bridge;

import java.util.Collections;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Sample;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.SaveIntoDataSourceCommand;

/**
 * The optimizer rule of the bridge. Two jobs, both per table reference:
 *
 * <ul>
 *   <li>A catalog table's relation is cached by name, and Spark reuses the cached index for a
 *       reference with other options ({@code WITH ('qbeastVersionAsOf' = ...)}): such a reference
 *       gets an index resolved from its own options, so two references to one table never share
 *       a version or a sample.
 *   <li>{@code Sample} without replacement ({@code TABLESAMPLE (p PERCENT)}, {@code df.sample(f)})
 *       over a Qbeast relation, and the {@code sampleFraction} option, become the row filter the
 *       planner gives for the fraction ({@code hash(indexed columns) < Weight(f)}), put right
 *       above the relation: the rows are exactly the engine's sample, and the scan passes the
 *       filter to the planner, which prunes the files by it.
 * </ul>
 *
 * <p>It also takes {@code INSERT INTO} / {@code INSERT OVERWRITE} on a Qbeast catalog table away
 * from Spark's file writer. The relation is a {@link HadoopFsRelation}, so Spark plans them as a
 * plain parquet write into the table's folder: new files the Delta log never names (the rows
 * would not be in the table) and, for an overwrite, the deletion of every file of the folder, the
 * log included. The command becomes a write through {@link QbeastSource} (the engine's writer)
 * when this driver has one, and is refused while it is planned, before it runs, otherwise.
 */
public final class QbeastRule extends Rule<LogicalPlan> {
  /**
   * Marks a {@code Sample} over a table without row weights (it stays Spark's random sample), so
   * that the optimizer's next passes over the same plan do not ask the planner again.
   */
  private static final TreeNodeTag<Boolean> KEEP_SAMPLE = new TreeNodeTag<>("qbeast.keepSample");

  private final SparkSession session;

  public QbeastRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "QbeastRule";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(Scala.partial(this::rewrite));
  }

  private LogicalPlan rewrite(LogicalPlan node) {
    if (node instanceof InsertIntoHadoopFsRelationCommand) {
      return rewriteInsert((InsertIntoHadoopFsRelationCommand) node);
    }
    if (node instanceof LogicalRelation) {
      return rewriteRelation((LogicalRelation) node);
    }
    if (node instanceof Sample) {
      return rewriteSample((Sample) node);
    }
    return null;
  }

  private static LogicalPlan rewriteInsert(InsertIntoHadoopFsRelationCommand insert) {
    if (!insert.fileIndex().isDefined() || !(insert.fileIndex().get() instanceof QbeastFileIndex)) {
      return null;
    }
    if (!Bridge.hasWriter()) {
      throw new UnsupportedOperationException(
          "qbeast: INSERT INTO / INSERT OVERWRITE on the Qbeast table at " + insert.outputPath()
              + " is not supported in a driver without the Python engine: Spark would write parquet "
              + "files the table's Delta log does not name; nothing was written. Write through the "
              + "engine: qbeast.write(df, path, mode='append' or 'overwrite'), a qbeast serve "
              + "endpoint, or a dbt qbeast model");
    }
    if (!insert.staticPartitions().isEmpty() || !insert.partitionColumns().isEmpty()) {
      throw new UnsupportedOperationException(
          "qbeast: INSERT with a PARTITION clause into the Qbeast table at " + insert.outputPath()
              + ": Qbeast tables are not partitioned; nothing was written");
    }
    java.util.Map<String, String> options = new java.util.HashMap<>(Scala.map(insert.options()));
    options.putIfAbsent("path", insert.outputPath().toString());
    return new SaveIntoDataSourceCommand(
        insert.query(), new QbeastSource(), Scala.immutableMap(options), insert.mode());
  }

  private static QbeastFileIndex indexOf(LogicalPlan node) {
    if (node instanceof LogicalRelation) {
      Object relation = ((LogicalRelation) node).relation();
      if (relation instanceof HadoopFsRelation && ((HadoopFsRelation) relation).location() instanceof QbeastFileIndex) {
        return (QbeastFileIndex) ((HadoopFsRelation) relation).location();
      }
    }
    return null;
  }

  private LogicalPlan rewriteRelation(LogicalRelation relation) {
    QbeastFileIndex index = indexOf(relation);
    if (index == null) {
      return null;
    }
    HadoopFsRelation fs = (HadoopFsRelation) relation.relation();
    QbeastFileIndex current = index;
    if (!index.builtFrom(Scala.map(fs.options()))) {
      current = QbeastFileIndex.resolve(session, Scala.map(fs.options()), fs.dataSchema());
    }
    String sample = current.pendingSampleFilter();
    if (sample != null) {
      current = current.withSampleApplied();
    }
    if (current == index) {
      return null;
    }
    LogicalRelation replaced = Relations.withLocation(relation, fs, current);
    return sample == null ? replaced : new Filter(resolve(sample, replaced), replaced);
  }

  private LogicalPlan rewriteSample(Sample sample) {
    if (sample.withReplacement() || sample.getTagValue(KEEP_SAMPLE).isDefined()) {
      return null;
    }
    LogicalPlan node = sample.child();
    while ((node instanceof Project || node instanceof Filter) && node.deterministic()) {
      node = node.children().head();
    }
    QbeastFileIndex index = indexOf(node);
    if (index == null) {
      return null;
    }
    String sql = index.sampleFilter(sample.lowerBound(), sample.upperBound());
    if (sql == null) {
      sample.setTagValue(KEEP_SAMPLE, Boolean.TRUE); // no row weights: Spark's own random sample
      return null;
    }
    LogicalPlan leaf = node;
    Filter filtered = new Filter(resolve(sql, leaf), leaf);
    return sample.child().transformUp(Scala.partial((LogicalPlan n) -> n == leaf ? filtered : null));
  }

  /** The planner's SQL predicate resolved against the relation's columns. */
  private Expression resolve(String sql, LogicalPlan relation) {
    Expression parsed;
    try {
      parsed = session.sessionState().sqlParser().parseExpression(sql);
    } catch (Exception e) { // ParseException is declared (checked) for Java callers
      throw new IllegalStateException("qbeast bridge: the planner's sample filter does not parse: " + sql, e);
    }
    LogicalPlan analyzed = session.sessionState().analyzer().execute(new Filter(parsed, relation));
    if (!(analyzed instanceof Filter) || !analyzed.resolved()) {
      throw new IllegalStateException("qbeast bridge: cannot resolve the sample filter " + sql);
    }
    return ((Filter) analyzed).condition();
  }
}
