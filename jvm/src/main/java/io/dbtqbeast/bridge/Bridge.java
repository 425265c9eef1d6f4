package io.dbtqbeast.bridge;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * Entry points the Python engine calls through Py4J, and the state they set.
 *
 * <p>The planner is one per JVM (the driver's Python process implements it); the optimizer rule is
 * per session, installed either by {@link QbeastExtensions} ({@code spark.sql.extensions}) when a
 * session is built or by {@link #install} into a running session.
 */
public final class Bridge {
  /** Changes whenever the Python side and the Java side must change together. */
  public static final String PROTOCOL = "3";

  private static volatile Planner planner;
  private static volatile Writer writer;
  private static volatile Procedures procedures;
  private static final Map<SparkSession, Boolean> RULE_SESSIONS =
      Collections.synchronizedMap(new WeakHashMap<>());

  private Bridge() {}

  public static String protocol() {
    return PROTOCOL;
  }

  /**
   * Spark's parquet scan of the given files, each read up to the given length (see
   * {@link PrefixFileIndex}); {@code filesJson} is {@code {"files": [[uri, length, modification ms], ...]}}.
   */
  public static org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> prefixScan(
      SparkSession session, String filesJson, String schemaJson) {
    return PrefixFileIndex.scan(session, filesJson, schemaJson);
  }

  /** Registers (or replaces, with {@code null}: removes) the Python planner of this JVM. */
  public static void setPlanner(Planner p) {
    planner = p;
  }

  public static boolean hasPlanner() {
    return planner != null;
  }

  static Planner planner() {
    Planner p = planner;
    if (p == null) {
      throw new IllegalStateException(
          "qbeast: the JVM read bridge has no Python planner in this driver. Call "
              + "qbeast.register(spark) from the driver's Python process (the dbt adapter and "
              + "qbeast.spark.session.get_or_create_session do it). A Spark Connect server must be "
              + "started without the qbeast bridge jar to use the Python data source instead.");
    }
    return p;
  }

  /** Registers (or, with {@code null}, removes) the Python writer of this JVM. */
  public static void setWriter(Writer w) {
    writer = w;
  }

  public static boolean hasWriter() {
    return writer != null;
  }

  static Writer writer() {
    Writer w = writer;
    if (w == null) {
      throw new IllegalStateException(
          "qbeast: this driver has no Python engine to write with. Writes to the qbeast source run "
              + "in the driver's Python process: call qbeast.register(spark) there, or write through "
              + "a qbeast serve endpoint, qbeast.write(df, path, ...) or a dbt qbeast model.");
    }
    return w;
  }

  /** Registers (or, with {@code null}, removes) the Python table operations SQL can call. */
  public static void setProcedures(Procedures p) {
    procedures = p;
  }

  /** True when the driver's Python engine has registered its SQL procedures. */
  static boolean proceduresInstalled() {
    return procedures != null;
  }

  static Procedures procedures() {
    Procedures p = procedures;
    if (p == null) {
      throw new IllegalStateException(
          "qbeast: this driver's Python engine offers no SQL procedures: start it with "
              + "`qbeast serve`, or call qbeast.enable_sql_procedures(spark) in the driver's Python process.");
    }
    return p;
  }

  static void ruleInstalled(SparkSession session) {
    RULE_SESSIONS.put(session, Boolean.TRUE);
    // the planner may hand Spark signed-URL files (on a cluster without a connector for the
    // table's store); scans copy this setting to the executors with the rest of the Hadoop conf
    session.sparkContext().hadoopConfiguration()
        .setIfUnset(SignedUrlFileSystem.IMPL_KEY, SignedUrlFileSystem.class.getName());
  }

  /** True when the session's optimizer runs {@link QbeastRule}. */
  public static boolean ruleActive(SparkSession session) {
    return RULE_SESSIONS.containsKey(session);
  }

  /**
   * Adds {@link QbeastRule} to a running session's extra optimizations (once).
   *
   * @return true if the rule was added, false if the session already had it
   */
  public static synchronized boolean install(SparkSession session) {
    ExperimentalMethods experimental = session.experimental();
    for (Rule<LogicalPlan> rule : Scala.list(experimental.extraOptimizations())) {
      if (rule instanceof QbeastRule) {
        ruleInstalled(session);
        return false;
      }
    }
    java.util.List<Rule<LogicalPlan>> rules =
        new java.util.ArrayList<>(Scala.list(experimental.extraOptimizations()));
    rules.add(new QbeastRule(session));
    experimental.extraOptimizations_$eq(Scala.seq(rules));
    ruleInstalled(session);
    return true;
  }
}
