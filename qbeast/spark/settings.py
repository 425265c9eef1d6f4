"""Every ``spark.qbeast.*`` session setting the engine reads: key, default, allowed values, meaning.

Settings are read from the Spark session (``spark.conf``) at the moment an operation needs them,
so ``spark.conf.set(...)`` between two writes takes effect for the second. A value that is set but
not allowed is an error naming the setting and the allowed values; an unset one is its default.
``docs/settings.md`` lists the same table for users (a test keeps the two in step).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qbeast.core.defaults import DEFAULT_CUBE_SIZE as FORMAT_DEFAULT_CUBE_SIZE
from qbeast.core.defaults import REVISION_HEADROOM_PERCENT
from qbeast.checks import check_int_at_least
from qbeast.errors import InvalidOptionError

# This module is imported with every session (qbeast.spark.session): it must stay light.

#: qbeast-spark's ``spark.qbeast.index.cubeDomainsBufferCapacity`` default.
DEFAULT_BUFFER_CAPACITY = 100_000
#: Rows the estimation pass reads from a large input: a larger input is estimated from a
#: Bernoulli sample of about this many rows (qbeast.index.estimation.estimation_fraction). 1M
#: sampled rows reproduced the full estimation's layout of the 20M-row benchmark table (361
#: cubes, 45 files) and put every threshold of an 8M-row table within 1% of it, in 0.8 s instead
#: of 1.2-1.5 s for 2M; 500k was faster still but lost 64 of the 361 cubes of the skewed table
#: (benchmarks/results/write.md).
DEFAULT_ESTIMATION_SAMPLE_ROWS = 1_000_000


@dataclass(frozen=True)
class Setting:
    """One session setting. ``choices`` (lower-case words) or ``minimum`` (integers) says what
    is allowed; values are parsed by :meth:`parse`."""

    key: str
    default: Any
    doc: str
    minimum: int | None = None
    choices: tuple[str, ...] | None = None
    #: what a free-text setting holds (e.g. "a local folder"); None: a number or a choice
    text: str | None = None
    #: the largest integer allowed (None: no bound)
    maximum: int | None = None

    def parse(self, value: Any) -> Any:
        """The setting's value from its text (``None``: unset, the default)."""
        if value is None:
            return self.default
        if self.text is not None:
            if not str(value).strip():
                raise InvalidOptionError(f"{self.key} is empty; expected {self.text}",
                                         option=self.key, value=value, allowed=self.text)
            return str(value).strip()
        if self.choices is not None:
            canonical = {choice.lower(): choice for choice in self.choices}
            word = canonical.get(str(value).strip().lower())
            if word is None:
                raise InvalidOptionError(
                    f"{self.key} is {value!r}; allowed values: {', '.join(self.choices)}",
                    option=self.key, value=value, allowed=list(self.choices),
                )
            return word
        try:
            number: Any = int(value)
        except ValueError:
            number = value  # not an integer: the check reports the text as given
        number = check_int_at_least(self.key, number, self.minimum if self.minimum is not None else 1,
                                    what=f"Spark conf {self.key}")
        if self.maximum is not None and number > self.maximum:
            raise InvalidOptionError(f"Spark conf {self.key} is {number}; allowed: {self.allowed}",
                                     option=self.key, value=value, allowed=self.allowed)
        return number

    def read(self, spark: Any) -> Any:
        """The value in ``spark``'s session (a ``SparkSession``, or ``None``: the default)."""
        return self.parse(spark.conf.get(self.key, None) if spark is not None else None)

    def read_from(self, conf: Mapping[str, Any]) -> Any:
        """The value in a configuration mapping (e.g. the settings a session is built with)."""
        return self.parse(conf.get(self.key))

    @property
    def allowed(self) -> str:
        """The allowed values, as the documentation states them."""
        if self.choices is not None:
            return ", ".join(self.choices)
        if self.text is not None:
            return self.text
        if self.maximum is not None:
            return f"integer from {self.minimum if self.minimum is not None else 1} to {self.maximum}"
        return "integer >= 0" if self.minimum == 0 else "positive integer"


DEFAULT_CUBE_SIZE = Setting(
    "spark.qbeast.index.defaultCubeSize", FORMAT_DEFAULT_CUBE_SIZE,
    "Desired rows per cube of a new table, an overwrite or a conversion (convert_to_qbeast) "
    "when no cube_size is given; appends keep the table's own.",
    minimum=1,
)
BUFFER_CAPACITY = Setting(
    "spark.qbeast.index.cubeDomainsBufferCapacity", DEFAULT_BUFFER_CAPACITY,
    "Rows per local tree in the estimation pass of a write (bounds each task's memory there); "
    "the write option buffer_capacity overrides it.",
    minimum=1,
)
ESTIMATION_SAMPLE_ROWS = Setting(
    "spark.qbeast.index.estimationSampleRows", DEFAULT_ESTIMATION_SAMPLE_ROWS,
    "Rows the estimation pass of a write reads from a larger input (a Bernoulli sample; 0 = "
    "every row); the write option estimation_sample_rows overrides it.",
    minimum=0,
)
REVISION_HEADROOM = Setting(
    "spark.qbeast.index.revisionHeadroomPercent", REVISION_HEADROOM_PERCENT,
    "When a write's data grows past a linear column's range and opens a new revision, the new "
    "range is widened by this percent of its span on the side(s) it grew, so that growing keys "
    "(dates, ids) open O(log growth) revisions; 0 = exact ranges, as qbeast-spark.",
    minimum=0,
)
WEIGHT_BANDS = Setting(
    "spark.qbeast.index.weightBands", "rowGroups",
    "How a write (and optimize) places each cube's rows by weight band (edges at the sample "
    "fractions 0.1%, 0.2%, 0.5%, 1%, 2%, 5%, 10%, 20%, 50%): rowGroups (one block per cube as "
    "qbeast-spark; each file's rows in band order, one row group per band, so a sample reads a "
    "prefix of the files it needs and box queries read as few files as without bands), files "
    "(each band of a subtree in files of its own; true means files), false (no bands: rows in "
    "arrival order, a sample reads whole files). Every layout is read by any qbeast reader.",
    choices=("rowGroups", "files", "true", "false"),
)
PARQUET_VERSION = Setting(
    "spark.qbeast.write.parquetVersion", "v2",
    "Which parquet data pages the engine's Spark writes produce (writes, appends, optimize): v2 "
    "(data page v2 and delta encodings for integer and string columns a dictionary does not "
    "fit: tables 9-28% smaller on the benchmark data; read by Spark 3.3 and later, DuckDB, "
    "delta-rs / deltalake, pyarrow and Databricks), v1 (Spark's default pages, for readers "
    "without delta encodings: Spark before 3.3, Snowflake). Row-level rewrites and band pieces "
    "joined on Spark Connect (written with pyarrow) follow the same choice. Both can be mixed "
    "in one table.",
    choices=("v2", "v1"),
)
SHIP_ENGINE = Setting(
    "spark.qbeast.shipEngine", "auto",
    "Whether sessions built by the engine send its Python code to the executors: auto (when "
    "tasks run outside this process: a cluster master or Spark Connect), true, false (the "
    "workers have dbt-qbeast installed).",
    choices=("auto", "true", "false"),
)
SQL_BRIDGE = Setting(
    "spark.qbeast.sqlBridge", "auto",
    "Which implementation reads qbeast in SQL: auto (the JVM read bridge, native parquet scans, "
    "when the installation has its jar and the session is a classic one; else the Python data "
    "source), false (always the Python data source). Read when the session is built or "
    "qbeast.register is called.",
    choices=("auto", "false"),
)

SHIPPED_SOURCE_ROWS = Setting(
    "spark.qbeast.merge.shippedSourceRows", 1_000_000,
    "Largest source (rows) of a merge or delete+insert on key columns that is collected and "
    "shipped to the tasks: the change then runs as one Spark job with one task per candidate "
    "file (read, matched against the source's keys, rewritten only when a row matched). A "
    "larger source, a merge on a SQL condition, a target_predicate (incremental_predicates) "
    "other than column IS [NOT] NULL tests joined by AND (a snapshot's current rows), "
    "floating-point keys, and tables with partition columns, column mapping or nested types "
    "join the source with the table in Spark instead (same result); 0 = always join.",
    minimum=0,
)
LOCAL_ROWS = Setting(
    "spark.qbeast.write.localRows", 100_000,
    "Largest input (rows) of an indexed append (qbeast.write with mode='append', the inserts "
    "of a merge, the rows an update moves, optimize) or of a first write (see "
    "spark.qbeast.write.localFirstWriteBytes) that is collected to the driver once and "
    "indexed there (stats, estimation, assignment, parquet files written with pyarrow in the "
    "table's encodings) instead of three Spark jobs; same revision, blocks and band layout. "
    "Larger inputs, and inputs whose estimation would be sampled, run in Spark, except the "
    "inserts of a merge whose source was shipped (spark.qbeast.merge.shippedSourceRows): the "
    "driver holds those already; 0 = always in Spark.",
    minimum=0,
)
LOCAL_FIRST_WRITE_BYTES = Setting(
    "spark.qbeast.write.localFirstWriteBytes", 64 * 1024 * 1024,
    "A write that starts a table or replaces it (a new table, mode='overwrite', a dbt model's "
    "build) is indexed on the driver like a small append (spark.qbeast.write.localRows) only "
    "when Spark estimates its input at most this many bytes, or its query reads at most that "
    "many (the sizes of the tables, files and subqueries it reads: a join of small tables, "
    "whose own estimate is the product of its sides). A larger or unknown size (DataFrames of "
    "an RDD or of a Python list, and Spark Connect DataFrames, have none) goes straight to the "
    "Spark jobs, so a model computed by a large query is never computed twice. A scan of one "
    "source (no filter, aggregate or join) whose size holds more rows than localRows at "
    "Spark's default row width goes to the Spark jobs too (the collect would give up). "
    "0 = first writes always in Spark.",
    minimum=0,
)
APPROX_LOCAL_READ_BYTES = Setting(
    "spark.qbeast.approx.localReadBytes", 32 * 1024 * 1024,
    "Largest band (bytes of the file prefixes it reads) of an approximate answer (approx) that "
    "is read in the driver with pyarrow instead of a Spark job, when the band is expected to "
    "hold at most a million rows, no filter is given and its files are local and plain; same "
    "rows, statistics and rows_read/bytes_read. Saves a Spark job's fixed cost per step; 0 = "
    "every band read by Spark.",
    minimum=0,
)

MIRROR_DIR = Setting(
    "spark.qbeast.storage.mirrorDir", None,
    "Local folder for tables on object stores (s3://, gs://, abfss://) when the engine moves "
    "their data files itself: new files are staged there before upload, and reads open local "
    "copies of the files they need (data files never change, so a copy stays right). Default: "
    "this user's own cache folder ($XDG_CACHE_HOME or ~/.cache, then qbeast/mirror; "
    "qbeast-mirror-<uid> in the system's temporary folder without a writable home), created "
    "owner-only (0700). A folder of another user is refused.",
    text="a local folder",
)
MIRROR_MAX_BYTES = Setting(
    "spark.qbeast.storage.mirrorMaxBytes", 20 * 1024**3,
    "Bytes of local copies kept in spark.qbeast.storage.mirrorDir; past it, the least recently "
    "used copies are removed (never one used in the last 10 minutes). Default 20 GiB.",
    minimum=0,
)
BRIDGE_FILES = Setting(
    "spark.qbeast.storage.bridgeFiles", "auto",
    "How Spark's own parquet reader (SQL through the JVM read bridge, DataFrame reads, and the "
    "scans of row-level changes, optimize and convert) opens the data files of a table on an "
    "object store: hadoop (through the Hadoop file system the session has for the scheme, such "
    "as hadoop-aws's s3a, with the session's fs.* settings; s3:// tables are read as s3a:// "
    "where Hadoop has no s3 file system), copies (local copies kept in "
    "spark.qbeast.storage.mirrorDir, for sessions whose executors share this disk), signed "
    "(ranged GETs on URLs the planner signs with the store's credentials, which executors on "
    "other machines can use without a Hadoop connector or credentials), auto (copies in local[*] "
    "sessions; where tasks run elsewhere, hadoop when the session's Hadoop has a file system "
    "for the scheme, else signed: a cluster master, or a Spark Connect server that installed "
    "the bridge's file system, as qbeast serve does). New files are always written through "
    "the engine's storage layer.",
    choices=("auto", "hadoop", "copies", "signed"),
)
SIGNED_URL_SECONDS = Setting(
    "spark.qbeast.storage.signedUrlSeconds", 6 * 3600,
    "How long a signed URL of spark.qbeast.storage.bridgeFiles=signed reads stays valid, in "
    "seconds (signed when a scan is planned; a scan that runs longer fails with a message "
    "naming this setting). At most 604800 (7 days, S3's limit); temporary credentials end "
    "their URLs sooner. Default 6 hours.",
    minimum=60, maximum=7 * 24 * 3600,
)

#: Every setting, in the order docs/settings.md lists them.
SETTINGS: tuple[Setting, ...] = (DEFAULT_CUBE_SIZE, BUFFER_CAPACITY, ESTIMATION_SAMPLE_ROWS,
                                 REVISION_HEADROOM, WEIGHT_BANDS, PARQUET_VERSION,
                                 SHIPPED_SOURCE_ROWS, LOCAL_ROWS, LOCAL_FIRST_WRITE_BYTES,
                                 APPROX_LOCAL_READ_BYTES, SHIP_ENGINE, SQL_BRIDGE, MIRROR_DIR,
                                 MIRROR_MAX_BYTES, BRIDGE_FILES, SIGNED_URL_SECONDS)


def check_write_settings(spark: Any) -> None:
    """Parse the settings a write reads only once its data is indexed (weight bands, parquet
    pages), so that a value that is not allowed fails the write before any Spark job runs."""
    for setting in (WEIGHT_BANDS, PARQUET_VERSION):
        setting.read(spark)
