package io.dbtqbeast.bridge;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow$;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The files of one read of a Qbeast table, as the Python planner chooses them per scan.
 *
 * <p>An index stands for one table reference: a location and a version (latest when the options
 * name none), plus the row filter of a sample the options ask for. It keeps no file list: every
 * {@link #listFiles} call asks the planner with that scan's data filters (as SQL text), so two
 * scans of one table in a query each get the files of their own filters, and a cached catalog
 * relation sees every commit. The options it was built from are kept so that {@link QbeastRule}
 * can tell when Spark reuses a cached relation for a reference with other options.
 */
public final class QbeastFileIndex implements FileIndex {
  private final SparkSession session;
  private final Map<String, String> options;
  private final String table;
  private final Path root;
  private final StructType schema;
  private final String sampleFilter;
  private final boolean sampleApplied;
  private final String description;

  private QbeastFileIndex(
      SparkSession session,
      Map<String, String> options,
      String table,
      Path root,
      StructType schema,
      String sampleFilter,
      boolean sampleApplied,
      String description) {
    this.session = session;
    this.options = options;
    this.table = table;
    this.root = root;
    this.schema = schema;
    this.sampleFilter = sampleFilter;
    this.sampleApplied = sampleApplied;
    this.description = description;
  }

  /** Asks the planner which table the options (and the catalog schema, if any) name. */
  static QbeastFileIndex resolve(SparkSession session, Map<String, String> options, StructType catalogSchema) {
    Map<String, String> normalized = normalize(options);
    String schemaJson = catalogSchema == null ? "" : catalogSchema.json();
    JsonNode answer = Json.answer(Bridge.planner().describe(Json.write(normalized), schemaJson), "describe");
    JsonNode sample = answer.get("sampleFilter");
    return new QbeastFileIndex(
        session,
        normalized,
        answer.get("table").asText(),
        new Path(URI.create(answer.get("root").asText())),
        (StructType) DataType.fromJson(answer.get("schema").toString()),
        sample == null || sample.isNull() ? null : sample.asText(),
        false,
        answer.path("description").asText(""));
  }

  /** Option keys lower-cased (Spark's data source options are case-insensitive). */
  static Map<String, String> normalize(Map<String, String> options) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      out.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    return Collections.unmodifiableMap(out);
  }

  Map<String, String> options() {
    return options;
  }

  boolean builtFrom(Map<String, String> relationOptions) {
    return options.equals(normalize(relationOptions));
  }

  StructType schema() {
    return schema;
  }

  /** The SQL row filter of the options' sample that still has to be put above the scan. */
  String pendingSampleFilter() {
    return sampleApplied ? null : sampleFilter;
  }

  QbeastFileIndex withSampleApplied() {
    return new QbeastFileIndex(session, options, table, root, schema, sampleFilter, true, description);
  }

  /** SQL text of the filter keeping the rows of the sample [lower, upper), or null if none. */
  String sampleFilter(double lower, double upper) {
    JsonNode answer = Json.answer(Bridge.planner().sampleFilter(table, lower, upper), "sampleFilter");
    JsonNode sql = answer.get("sql");
    return sql == null || sql.isNull() ? null : sql.asText();
  }

  @Override
  public scala.collection.immutable.Seq<Path> rootPaths() {
    return Scala.seq(Collections.singletonList(root));
  }

  @Override
  public scala.collection.immutable.Seq<PartitionDirectory> listFiles(
      scala.collection.immutable.Seq<Expression> partitionFilters,
      scala.collection.immutable.Seq<Expression> dataFilters) {
    List<String> texts = new ArrayList<>();
    for (Expression filter : Scala.list(dataFilters)) {
      String text = sqlText(filter);
      if (text != null) {
        texts.add(text);
      }
    }
    List<FileStatusWithMetadata> files = new ArrayList<>();
    for (FileStatus status : plan(texts)) {
      files.add(new FileStatusWithMetadata(status, Scala.emptyMap()));
    }
    PartitionDirectory directory = new PartitionDirectory(InternalRow$.MODULE$.empty(), Scala.seq(files));
    return Scala.seq(Collections.singletonList(directory));
  }

  private List<FileStatus> plan(List<String> filters) {
    String timeZone = session.sessionState().conf().sessionLocalTimeZone();
    JsonNode answer = Json.answer(Bridge.planner().listFiles(table, Json.write(filters), timeZone), "listFiles");
    return PrefixFileIndex.statuses(answer.get("files"));
  }

  /**
   * A data filter as SQL text without table qualifiers ({@code (x >= 100.0D)}); null when Spark
   * cannot print it (then it just does not prune).
   */
  static String sqlText(Expression filter) {
    try {
      Expression bare =
          filter.transform(
              Scala.partial(
                  (Expression e) ->
                      e instanceof AttributeReference
                          ? ((AttributeReference) e).withQualifier(Scala.seq(Collections.emptyList()))
                          : null));
      return bare.sql();
    } catch (RuntimeException e) {
      return null;
    }
  }

  @Override
  public String[] inputFiles() {
    List<String> paths = new ArrayList<>();
    for (FileStatus status : plan(Collections.emptyList())) {
      paths.add(status.getPath().toString());
    }
    return paths.toArray(new String[0]);
  }

  @Override
  public void refresh() {
    // Nothing is cached here: every listing asks the planner for the current snapshot.
  }

  @Override
  public long sizeInBytes() {
    return Json.answer(Bridge.planner().tableSize(table), "tableSize").get("bytes").asLong();
  }

  @Override
  public StructType partitionSchema() {
    return new StructType();
  }

  @Override
  public String toString() {
    return "QbeastFileIndex(" + (description.isEmpty() ? root.toString() : description) + ")";
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof QbeastFileIndex)) {
      return false;
    }
    QbeastFileIndex that = (QbeastFileIndex) other;
    return table.equals(that.table)
        && Objects.equals(sampleFilter, that.sampleFilter)
        && sampleApplied == that.sampleApplied
        && options.equals(that.options);
  }

  @Override
  public int hashCode() {
    return Objects.hash(table, sampleFilter, sampleApplied, options);
  }
}
