package io.dbtqbeast.bridge;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.BucketSpec;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Building Spark's file relations through reflection where constructors differ between Spark
 * minors: {@code HadoopFsRelation} takes the session as a seventh (second-list) argument in 4.x
 * and not before, and {@code LogicalRelation}'s fields change between minors. Spark's own
 * {@code TreeNode.makeCopy} copies a {@code LogicalRelation} whatever its arity.
 */
final class Relations {
  private Relations() {}

  static HadoopFsRelation fsRelation(
      FileIndex location,
      StructType partitionSchema,
      StructType dataSchema,
      Option<BucketSpec> bucketSpec,
      FileFormat format,
      scala.collection.immutable.Map<String, String> options,
      SparkSession session) {
    for (Constructor<?> c : HadoopFsRelation.class.getConstructors()) {
      Class<?>[] types = c.getParameterTypes();
      try {
        if (types.length == 7) {
          return (HadoopFsRelation) c.newInstance(location, partitionSchema, dataSchema, bucketSpec, format, options, session);
        }
        if (types.length == 6) {
          return (HadoopFsRelation) c.newInstance(location, partitionSchema, dataSchema, bucketSpec, format, options);
        }
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        throw cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("qbeast bridge: cannot build a HadoopFsRelation", e);
      }
    }
    throw new IllegalStateException(
        "qbeast bridge: this Spark version's HadoopFsRelation has no constructor the bridge knows");
  }

  /** {@code relation} reading through {@code location} instead of its own index. */
  static LogicalRelation withLocation(LogicalRelation relation, HadoopFsRelation fs, FileIndex location) {
    HadoopFsRelation replaced =
        fsRelation(location, fs.partitionSchema(), fs.dataSchema(), fs.bucketSpec(), fs.fileFormat(), fs.options(), fs.sparkSession());
    java.util.List<Object> args = new java.util.ArrayList<>();
    scala.collection.Iterator<Object> fields = relation.productIterator();
    while (fields.hasNext()) {
      Object field = fields.next();
      args.add(field == fs ? replaced : field);
    }
    return (LogicalRelation) relation.makeCopy(args.toArray());
  }
}
