package io.dbtqbeast.bridge;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * A fixed list of parquet files, each read from its start up to a given length.
 *
 * <p>Spark splits a file into byte ranges by the length its index reports, and its parquet reader
 * reads a row group in the range holding the row group's midpoint; the footer is found from the
 * file's real end. Reporting a shorter length therefore reads exactly the row groups that end
 * within it. The caller chooses the lengths; this class knows nothing of why.
 */
final class PrefixFileIndex implements FileIndex {
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;

  private final List<FileStatus> files;

  private PrefixFileIndex(List<FileStatus> files) {
    this.files = files;
  }

  /**
   * A DataFrame over {@code filesJson} ({@code {"files": [[uri, length, modification ms], ...]}}) read with
   * {@code schemaJson} (Spark's JSON of a struct type) by Spark's parquet reader.
   */
  static Dataset<Row> scan(SparkSession session, String filesJson, String schemaJson) {
    List<FileStatus> files = statuses(Json.answer(filesJson, "prefixScan").get("files"));
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    PrefixFileIndex index = new PrefixFileIndex(files);
    return session.baseRelationToDataFrame(Relations.fsRelation(
        index, new StructType(), schema, Option.empty(), new ParquetFileFormat(), Scala.emptyMap(), session));
  }

  /**
   * The file statuses of a planner's file list ({@code [[uri, length, modification ms], ...]}):
   * the length is what Spark reads of the file (see the class comment).
   */
  static List<FileStatus> statuses(JsonNode files) {
    List<FileStatus> out = new ArrayList<>();
    for (JsonNode file : files) {
      Path path = new Path(URI.create(file.get(0).asText()));
      out.add(new FileStatus(file.get(1).asLong(), false, 1, BLOCK_SIZE, file.get(2).asLong(), path));
    }
    return out;
  }

  @Override
  public scala.collection.immutable.Seq<Path> rootPaths() {
    List<Path> roots = new ArrayList<>();
    for (FileStatus status : files) {
      roots.add(status.getPath());
    }
    return Scala.seq(roots);
  }

  @Override
  public scala.collection.immutable.Seq<PartitionDirectory> listFiles(
      scala.collection.immutable.Seq<Expression> partitionFilters,
      scala.collection.immutable.Seq<Expression> dataFilters) {
    List<FileStatusWithMetadata> out = new ArrayList<>();
    for (FileStatus status : files) {
      out.add(new FileStatusWithMetadata(status, Scala.emptyMap()));
    }
    PartitionDirectory directory = new PartitionDirectory(InternalRow$.MODULE$.empty(), Scala.seq(out));
    return Scala.seq(Collections.singletonList(directory));
  }

  @Override
  public String[] inputFiles() {
    String[] paths = new String[files.size()];
    for (int i = 0; i < paths.length; i++) {
      paths[i] = files.get(i).getPath().toString();
    }
    return paths;
  }

  @Override
  public void refresh() {
    // a fixed list: nothing to refresh
  }

  @Override
  public long sizeInBytes() {
    long total = 0;
    for (FileStatus status : files) {
      total += status.getLen();
    }
    return total;
  }

  @Override
  public StructType partitionSchema() {
    return new StructType();
  }

  @Override
  public String toString() {
    return "PrefixFileIndex(" + files.size() + " files)";
  }
}
