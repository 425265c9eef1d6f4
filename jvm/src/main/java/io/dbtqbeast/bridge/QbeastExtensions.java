package io.dbtqbeast.bridge;

import java.util.function.Function;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.dbtqbeast.bridge.QbeastExtensions}: every session built with it
 * runs {@link QbeastRule} in its optimizer, resolves path queries with {@link QbeastPathRule} and
 * runs {@code DELETE} and {@code UPDATE} on qbeast tables as the engine's procedures ({@link RowLevelStatements}), and
 * creates qbeast tables on object stores with {@code AS SELECT} without Hadoop ({@link StoreCtas}).
 */
public final class QbeastExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(rule(session -> {
      Bridge.ruleInstalled(session);
      return new QbeastRule(session);
    }));
    extensions.injectHintResolutionRule(rule(QbeastPathRule::new));
    extensions.injectHintResolutionRule(rule(RowLevelStatements::new));
    extensions.injectPostHocResolutionRule(rule(StoreCtas::new));
    return BoxedUnit.UNIT;
  }

  /** A rule builder as Spark's extension points take it (a Scala function of the session). */
  private static AbstractFunction1<SparkSession, Rule<LogicalPlan>> rule(
      Function<SparkSession, Rule<LogicalPlan>> build) {
    return new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return build.apply(session);
      }
    };
  }
}
