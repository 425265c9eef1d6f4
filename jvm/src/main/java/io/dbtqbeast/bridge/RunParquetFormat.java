package io.dbtqbeast.bridge;

import java.util.Arrays;

import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's parquet writer with row groups cut where a key changes.
 *
 * <p>The data's last two columns are ints that are not written: the <em>run key</em> and a
 * <em>tracked value</em>. The rows of one output file must arrive grouped by run key (the caller
 * sorts them). Each run is written as row groups of its own: a row group ends where the key
 * changes, and also, as usual, when it reaches the block size. The footer gets one key-value
 * entry, under the name the {@code runs.footerKey} option gives, whose value lists per run, in
 * file order, {@code [lowest tracked value, rows]} as a JSON array of arrays.
 *
 * <p>Everything else (schema conversion, codecs, page versions, committers) is Spark's parquet
 * writer, unchanged. The caller chooses what the key and the tracked value mean; this class knows
 * nothing of why. Use it as {@code df.write.format("io.dbtqbeast.bridge.RunParquetFormat")}.
 */
public final class RunParquetFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;

  /** Option naming the footer entry that records the runs (required). */
  public static final String FOOTER_KEY_OPTION = "runs.footerKey";

  @Override
  public OutputWriterFactory prepareWrite(SparkSession session, Job job,
      scala.collection.immutable.Map<String, String> options, StructType dataSchema) {
    Option<String> key = options.get(FOOTER_KEY_OPTION);
    if (key.isEmpty() || key.get().isEmpty()) {
      throw new IllegalArgumentException("RunParquetFormat needs the option " + FOOTER_KEY_OPTION);
    }
    StructField[] fields = dataSchema.fields();
    int n = fields.length;
    if (n < 3 || !fields[n - 2].dataType().equals(DataTypes.IntegerType)
        || !fields[n - 1].dataType().equals(DataTypes.IntegerType)) {
      throw new IllegalArgumentException("RunParquetFormat writes data whose last two columns are "
          + "ints (the run key and the tracked value) after at least one written column; got "
          + dataSchema.simpleString());
    }
    RunOutputWriter.checkSupported();
    StructType written = new StructType(Arrays.copyOf(fields, n - 2));
    OutputWriterFactory parquet = super.prepareWrite(session, job, options, written);
    return new Factory(parquet, written, key.get());
  }

  @Override
  public String shortName() {
    return "qbeast-runs-parquet";
  }

  @Override
  public String toString() {
    return "RunParquet";
  }

  /** Spark's parquet factory for names; {@link RunOutputWriter} for the files. */
  private static final class Factory extends OutputWriterFactory {
    private static final long serialVersionUID = 1L;

    private final OutputWriterFactory parquet;
    private final StructType written;
    private final String footerKey;

    Factory(OutputWriterFactory parquet, StructType written, String footerKey) {
      this.parquet = parquet;
      this.written = written;
      this.footerKey = footerKey;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
      return parquet.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
      return new RunOutputWriter(path, written, footerKey, context);
    }
  }
}
