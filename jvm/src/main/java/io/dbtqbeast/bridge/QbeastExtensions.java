package io.dbtqbeast.bridge;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.dbtqbeast.bridge.QbeastExtensions}: every session built with it
 * runs {@link QbeastRule} in its optimizer, resolves path queries with {@link QbeastPathRule} and
 * refuses row-level SQL on qbeast tables naming the procedure instead ({@link RowLevelRefusal}), and
 * creates qbeast tables on object stores with {@code AS SELECT} without Hadoop ({@link StoreCtas}).
 */
public final class QbeastExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            Bridge.ruleInstalled(session);
            return new QbeastRule(session);
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new QbeastPathRule(session);
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new RowLevelRefusal(session);
          }
        });
    extensions.injectPostHocResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new StoreCtas(session);
          }
        });
    return BoxedUnit.UNIT;
  }
}
