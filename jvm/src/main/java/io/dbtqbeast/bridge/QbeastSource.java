package io.dbtqbeast.bridge;

import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The {@code qbeast} data source on the JVM: Spark's own parquet relation over a
 * {@link QbeastFileIndex}.
 *
 * <p>Reads by path ({@code spark.read.format("qbeast").load(path)})
 * and catalog tables ({@code USING qbeast}, which hand over their {@code LOCATION} as the
 * {@code path} option and their schema) both come here. Spark then prunes columns, reads with the
 * vectorized parquet reader and passes every scan's data filters to the index.
 *
 * <p>Writes ({@code CREATE TABLE ... USING qbeast AS SELECT}, {@code df.write.format("qbeast")},
 * and {@code INSERT} into a Qbeast catalog table, which {@link QbeastRule} routes here) are handed
 * with their rows to the Python engine's {@link Writer} in this driver.
 */
public final class QbeastSource
    implements RelationProvider, SchemaRelationProvider, CreatableRelationProvider, DataSourceRegister {
  public static final String NAME = "qbeast";

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public BaseRelation createRelation(SQLContext context, scala.collection.immutable.Map<String, String> parameters) {
    return create(context.sparkSession(), parameters, null);
  }

  @Override
  public BaseRelation createRelation(
      SQLContext context, scala.collection.immutable.Map<String, String> parameters, StructType schema) {
    return create(context.sparkSession(), parameters, schema);
  }

  @Override
  public BaseRelation createRelation(
      SQLContext context, SaveMode mode, scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
    SparkSession session = context.sparkSession();
    Json.answer(Bridge.writer().write(Json.write(Scala.map(parameters)), mode.name(), data), "write");
    return create(session, parameters, null);
  }

  private static BaseRelation create(
      SparkSession session, scala.collection.immutable.Map<String, String> parameters, StructType catalogSchema) {
    if (!Bridge.ruleActive(session) && Bridge.hasPlanner()) {
      // A driver whose Python engine registered its planner serves every session it opens (the
      // sessions a Thrift or Spark Connect server makes for its clients): the rule is added to
      // such a session on its first qbeast relation.
      Bridge.install(session);
    }
    if (!Bridge.ruleActive(session)) {
      throw new IllegalStateException(
          "qbeast: the JVM read bridge is not registered in this Spark session: call "
              + "qbeast.register(spark) (needed once per session, also for sessions made with "
              + "newSession()), or build the session with qbeast.spark.session.get_or_create_session.");
    }
    Map<String, String> options = Scala.map(parameters);
    QbeastFileIndex index = QbeastFileIndex.resolve(session, options, catalogSchema);
    return Relations.fsRelation(
        index, new StructType(), index.schema(), Option.empty(), new ParquetFileFormat(), parameters, session);
  }
}
