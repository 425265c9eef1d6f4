package io.dbtqbeast.bridge;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.parquet.hadoop.ParquetRecordWriter;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.StructType;

/**
 * One file of {@link RunParquetFormat}: Spark's parquet record writer, told to close its row group
 * wherever the run key changes.
 *
 * <p>parquet-mr has no public call that ends a row group early: its record writer ends one when
 * the buffered pages reach the block size. This writer calls the two private steps that check
 * runs when that size is reached (flush the row group, start new column stores), found by
 * reflection once per class; {@link #checkSupported()} fails the write on the driver, before any
 * task runs, if a parquet-mr version lacks them.
 */
final class RunOutputWriter extends OutputWriter {
  private static final String WRITER_FIELD = "internalWriter";
  private static final String FLUSH_METHOD = "flushRowGroupToStore";
  private static final String INIT_METHOD = "initStore";

  private static volatile Members members;

  private final String path;
  private final TaskAttemptContext context;
  private final RunWriteSupport support;
  private final RecordWriter<Void, InternalRow> writer;
  private final Object internal;
  private final UnsafeProjection project;
  private final int keyOrdinal;
  private final int trackedOrdinal;
  private final StringBuilder record = new StringBuilder("[");

  private int runs;
  private int key;
  private int lowest;
  private long rows;

  RunOutputWriter(String path, StructType written, String footerKey, TaskAttemptContext context) {
    this.path = path;
    this.context = context;
    this.support = new RunWriteSupport(footerKey);
    this.keyOrdinal = written.length();
    this.trackedOrdinal = written.length() + 1;
    // the written columns are the row's first ones: binding them by ordinal drops the last two
    this.project = UnsafeProjection.create(written);
    try {
      this.writer = new ParquetOutputFormat<InternalRow>(support).getRecordWriter(context, new Path(path));
      this.internal = resolved().writer.get(writer);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while opening " + path, e);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Throws when this parquet-mr cannot end a row group on demand (see the class comment). */
  static void checkSupported() {
    try {
      resolved();
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new UnsupportedOperationException("RunParquetFormat cannot cut row groups with this "
          + "parquet-mr (" + e + "); write without it", e);
    }
  }

  @Override
  public void write(InternalRow row) {
    int rowKey = row.getInt(keyOrdinal);
    int value = row.getInt(trackedOrdinal);
    if (rows > 0 && rowKey != key) {
      endRun();
      endRowGroup();
    }
    if (rows == 0) {
      key = rowKey;
      lowest = value;
    } else if (value < lowest) {
      lowest = value;
    }
    try {
      writer.write(null, project.apply(row));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while writing " + path, e);
    }
    rows++;
  }

  @Override
  public void close() {
    if (rows > 0) {
      endRun();
    }
    support.record = runs > 0 ? record.append(']').toString() : null;
    try {
      writer.close(context);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while closing " + path, e);
    }
  }

  @Override
  public String path() {
    return path;
  }

  private void endRun() {
    if (runs > 0) {
      record.append(',');
    }
    record.append('[').append(lowest).append(',').append(rows).append(']');
    runs++;
    rows = 0;
  }

  private void endRowGroup() {
    try {
      Members m = resolved();
      m.flush.invoke(internal);
      m.init.invoke(internal);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw new UncheckedIOException(io);
      }
      throw new IllegalStateException("ending a row group of " + path + " failed", cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Members resolved() throws ReflectiveOperationException {
    Members m = members;
    if (m == null) {
      Field writer = ParquetRecordWriter.class.getDeclaredField(WRITER_FIELD);
      writer.setAccessible(true);
      Class<?> internal = writer.getType();
      Method flush = internal.getDeclaredMethod(FLUSH_METHOD);
      flush.setAccessible(true);
      Method init = internal.getDeclaredMethod(INIT_METHOD);
      init.setAccessible(true);
      m = new Members(writer, flush, init);
      members = m;
    }
    return m;
  }

  private record Members(Field writer, Method flush, Method init) {}

  /** Spark's write support, plus the run record in the footer. */
  private static final class RunWriteSupport extends ParquetWriteSupport {
    private final String footerKey;
    private String record;

    RunWriteSupport(String footerKey) {
      this.footerKey = footerKey;
    }

    @Override
    public FinalizedWriteContext finalizeWrite() {
      Map<String, String> extra = new HashMap<>();
      if (record != null) {
        extra.put(footerKey, record);
      }
      return new FinalizedWriteContext(extra);
    }
  }
}
