"""The Spark job of one step of an approximate answer: one weight band in, cluster statistics out.

A step reads only the rows of the band ``[lo, hi)`` of ``hash(indexed columns)``: the read
planner picks the files (and file prefixes) whose blocks can hold such rows and whose indexed
ranges can meet the filter, Spark's parquet reader reads them, and the band is the row filter.
Only the weight, the group columns and the inputs leave the scan. A band expected to be small
(:data:`DRIVER_FOLD_ROWS`) is folded on the driver (:mod:`qbeast.approx.clusters`): read there
too, with pyarrow and without a Spark job, when its files are few bytes and no filter of the
user's needs Spark (:mod:`qbeast.spark.read.local_band`), else it comes back as Arrow from one
scan-only job (:func:`read_small_bands` reads several such bands in one job); a larger one is
folded by Spark twice, so only a few numbers per group come back:

1. per ``(filter met, group, weight)``: the rows, and for every input column its sum and its
   non-null count (one row per cluster: the rows of one group sharing one weight). The band
   that completes the table folds per ``(filter met, group)`` instead: its answer is exact, the
   totals are enough, and the per-weight shuffle is the costly part of a step;
2. per ``(filter met, group)``: the sufficient statistics of those clusters
   (:class:`qbeast.approx.estimator.ClusterStats`), plus the sum over the cluster's weight of
   (cluster rows) x (rows of that weight in every group), whose total is the sum of squared rows
   per weight the row-count check needs.

Rows that fail the filter are kept as one group (their group columns nulled) so the row-count
check sees every row of the files read. The rows whose indexed columns are all null can be read
apart, as a stratum, or left out (:func:`null_stratum`). Spark's scan metrics say what the step
read.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from qbeast.approx.clusters import fold_band
from qbeast.approx.estimator import ClusterStats
from qbeast.approx.sequential import BandRead
from qbeast.core.sql import quote_identifier, row_weight_sql
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read.dataframe import plan_dataframe
from qbeast.spark.read.local_band import band_table, readable_here
from qbeast.spark.read.planner import ReadPlan, plan_read
from qbeast.spark.read.scan_metrics import scan_io

#: The most rows a band may be expected to hold for its rows to be folded on the driver (a few
#: narrow columns, about 20-40 MB as Arrow): smaller bands cost a scan-only job, larger ones the
#: two shuffles of Spark's fold, which then costs less than moving the rows.
DRIVER_FOLD_ROWS = 1_000_000

_STATS = ("clusters", "s_y", "s_m", "s_yy", "s_mm", "s_ym", "s_abs_y", "max_abs_y", "max_m")


def band_plan(snapshot: Any, predicate: Any, lo: int, hi: int | None) -> ReadPlan:
    """The read plan of the weights ``[lo, hi)`` (``hi`` None: to the largest weight, inclusive).

    The plan's files are what the band needs; its row filter is dropped (``weight_range``
    None) because :func:`read_band` applies the band itself, inclusive of ``MAX_WEIGHT`` at the
    top, which a ``hash < hi`` filter cannot express.
    """
    plan = plan_read(snapshot, predicate=predicate, weight_range=(lo, MAX_WEIGHT if hi is None else hi))
    return dataclasses.replace(plan, weight_range=None)


def _band_condition(hash_columns: Sequence[str], lo: int, hi: int | None, nulls: bool | None) -> str:
    """The band's row filter as SQL text (one call into Spark, where a Column costs one per
    operator): ``lo <= weight < hi`` (``hi`` None: no upper bound), and with ``nulls`` set
    only (True) or none (False) of the rows whose indexed columns are all null."""
    weight = row_weight_sql(hash_columns)
    parts = [] if lo == MIN_WEIGHT else [f"{weight} >= {lo}"]
    if hi is not None:
        parts.append(f"{weight} < {hi}")
    if nulls is not None:
        all_null = " AND ".join(f"{quote_identifier(c)} IS NULL" for c in hash_columns)
        parts.append(f"({all_null})" if nulls else f"NOT ({all_null})")
    return " AND ".join(parts) or "true"


def null_stratum(hash_columns: Sequence[str], predicate: Any) -> tuple[Any, tuple[int, int]]:
    """(pruning predicate, weight band) of the rows whose indexed columns are all null.

    They all weigh Spark's hash seed (Murmur3 skips nulls), so the band is that one weight, and
    the index and the files' null counts prune the read to where such rows can be.
    """
    from qbeast.core import expressions as ex
    from qbeast.index.row_weights import SPARK_HASH_SEED

    parts = [ex.IsNull(c) for c in hash_columns]
    if not isinstance(predicate, ex.AlwaysTrue):
        parts.append(predicate)
    return (parts[0] if len(parts) == 1 else ex.And(*parts)), (SPARK_HASH_SEED, SPARK_HASH_SEED + 1)


def _filter_column(row_filter: Any):
    """The user's filter as a boolean Column (null counts as false); None: every row."""
    from pyspark.sql import functions as F

    if row_filter is None:
        return F.lit(True)
    condition = F.expr(row_filter) if isinstance(row_filter, str) else row_filter
    return F.coalesce(condition, F.lit(False))


def band_scope(snapshot: Any, predicate: Any, lo: int, hi: int | None,
                nulls: bool | None) -> tuple[ReadPlan, int, int | None]:
    """The files of a band and the weights ``[lo, hi)`` its row filter keeps (the all-null
    stratum of ``nulls`` True: the files :func:`null_stratum` prunes to, every weight)."""
    if nulls:
        predicate, (lo, hi) = null_stratum(tuple(snapshot.latest_revision.columns), predicate)
        return band_plan(snapshot, predicate, lo, hi), MIN_WEIGHT, MAX_WEIGHT
    return band_plan(snapshot, predicate, lo, hi), lo, hi


def band_dataframe(access: FileAccess, snapshot: Any, plan: ReadPlan, row_filter: Any, user_filter: Any,
               group_by: Sequence[str], columns: Sequence[str], lo: int, hi: int | None,
               nulls: bool | None, tag: int | None = None) -> Any:
    """The rows of one band, read from ``plan``'s files, as ``_met, _w, _g0.., _v0..`` (see
    :mod:`qbeast.approx.clusters`; the arguments are :func:`read_band`'s, ``lo`` and ``hi``
    those of :func:`band_scope`; ``tag``: a ``_band`` column of this value, to tell bands
    apart in a union; ``access``: how the read reaches the table's files, decided once per
    ``approx``)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    hash_columns = tuple(snapshot.latest_revision.columns)
    try:
        df = plan_dataframe(access, plan).filter(_band_condition(hash_columns, lo, hi, nulls))
        met = _filter_column(row_filter)  # one projection: each DataFrame step is a round trip
        keys = [F.when(met, F.col(quote_identifier(g))).alias(f"_g{i}")
                for i, g in enumerate(group_by)]
        values = [F.when(met, F.col(quote_identifier(c)).cast("double")).alias(f"_v{i}")
                  for i, c in enumerate(columns)]
        tags = [] if tag is None else [F.lit(tag).alias("_band")]
        return df.select(met.alias("_met"), F.expr(row_weight_sql(hash_columns)).alias("_w"),
                         *keys, *values, *tags)
    except PySparkException as exc:
        names = [f["name"] for f in json.loads(plan.schema_json)["fields"]]
        reason = next((line for line in str(exc).splitlines() if line.strip()), repr(exc))
        raise InvalidOptionError(
            f"filter {user_filter!r} is not a valid SQL predicate over the table's columns "
            f"{names}: {reason.strip()}") from exc


@dataclasses.dataclass(frozen=True)
class _Band:
    """One band to read: its plan and weight range (:func:`band_scope`) and its null stratum."""

    plan: ReadPlan
    lo: int
    hi: int | None
    nulls: bool | None

    @property
    def per_weight(self) -> bool:
        """Folded per weight, but for the band completing the table (exact: totals suffice)."""
        return self.hi is not None or bool(self.nulls)


def _band(snapshot: Any, predicate: Any, lo: int, hi: int | None, nulls: bool | None) -> _Band:
    plan, lo, hi = band_scope(snapshot, predicate, lo, hi, nulls)
    return _Band(plan, lo, hi, nulls)


def _here(spark: Any, snapshot: Any, bands: Sequence[_Band], row_filter: Any,
          group_by: Sequence[str], columns: Sequence[str], local: bool) -> bool:
    """Whether every one of ``bands`` is read in this process: asked for (``local``) and
    allowed by its files (:func:`qbeast.spark.read.local_band.readable_here`, up to the
    session's ``spark.qbeast.approx.localReadBytes``)."""
    if not local:
        return False
    limit = settings.APPROX_LOCAL_READ_BYTES.read(spark)
    hash_columns = tuple(snapshot.latest_revision.columns)
    return all(readable_here(b.plan, row_filter, hash_columns, group_by, columns, limit)
               for b in bands)


def _read_here(snapshot: Any, band: _Band, group_by: Sequence[str],
               columns: list[str]) -> BandRead:
    """A band read and folded in this process (:mod:`qbeast.spark.read.local_band`): no job."""
    table, rows_read = band_table(band.plan, tuple(snapshot.latest_revision.columns), group_by,
                                  columns, band.lo, band.hi, band.nulls)
    found, band_rows, sum_sq = fold_band(table, len(group_by), columns, band.per_weight)
    return BandRead(found, band_rows, sum_sq, rows_read, band.plan.selected_bytes)


def read_band(access: FileAccess, snapshot: Any, predicate: Any, row_filter: Any, user_filter: Any,
              group_by: Sequence[str], inputs: Sequence[str | None], lo: int,
              hi: int | None, nulls: bool | None = None,
              expected_rows: float | None = None, local: bool = True) -> BandRead:
    """Cluster statistics of the rows of weight ``[lo, hi)`` per group (see the module text).

    ``nulls`` True reads only the rows whose indexed columns are all null (``lo``, ``hi`` are
    then ignored: :func:`null_stratum`), False leaves them out, None does not look.
    ``expected_rows``: about how many rows the band holds (None: unknown); up to
    :data:`DRIVER_FOLD_ROWS` they are folded on the driver (:func:`fold_on_driver`), and read
    there too, without a Spark job, when ``local`` and the band's files allow it
    (:func:`_here`).

    ``row_filter`` and ``user_filter`` come from
    :func:`qbeast.spark.read.predicates.user_predicate`; ``inputs`` are the columns the
    aggregates read (None: the row count, always computed).
    """
    columns = [c for c in dict.fromkeys(inputs) if c is not None]
    band = _band(snapshot, predicate, lo, hi, nulls)
    plan = band.plan
    if fold_on_driver(expected_rows, json.loads(plan.schema_json), group_by):
        if _here(access.spark, snapshot, [band], row_filter, group_by, columns, local):
            return _read_here(snapshot, band, group_by, columns)
        rows = band_dataframe(access, snapshot, plan, row_filter, user_filter, group_by, columns,
                              band.lo, band.hi, nulls)
        table = rows.toArrow()  # one scan-only job: the band's rows, a few narrow columns
        io = scan_io(rows, [plan])
        found, band_rows, sum_sq = fold_band(table, len(group_by), columns, band.per_weight)
        return BandRead(found, band_rows, sum_sq, io.rows_scanned, io.bytes)
    rows = band_dataframe(access, snapshot, plan, row_filter, user_filter, group_by, columns,
                          band.lo, band.hi, nulls)
    return _fold_in_spark(rows, group_by, columns, band.per_weight, plan)


def read_small_bands(access: FileAccess, snapshot: Any, predicate: Any, row_filter: Any, user_filter: Any,
                     group_by: Sequence[str], inputs: Sequence[str | None],
                     bands: Sequence[tuple[int, int | None, bool | None]],
                     local: bool = True) -> list[BandRead]:
    """:func:`read_band` of several small bands ``(lo, hi, nulls)`` without a job per band.

    When every band is read in this process (:func:`_here`), each gets its own scan figures.
    Otherwise the bands' scans run as one Spark job (a union, each
    row tagged with its band), whose rows are folded on the driver band by band: one job's
    fixed cost instead of one per band; what the scans read (Spark's metrics of the whole job)
    is reported on the first band's read.
    """
    columns = [c for c in dict.fromkeys(inputs) if c is not None]
    scopes = [_band(snapshot, predicate, lo, hi, nulls) for lo, hi, nulls in bands]
    assert scopes, "no band to read"
    if _here(access.spark, snapshot, scopes, row_filter, group_by, columns, local):
        return [_read_here(snapshot, band, group_by, columns) for band in scopes]
    union = None
    for i, band in enumerate(scopes):
        rows = band_dataframe(access, snapshot, band.plan, row_filter, user_filter, group_by,
                              columns, band.lo, band.hi, band.nulls, tag=i)
        union = rows if union is None else union.union(rows)
    assert union is not None
    table = union.toArrow()
    io = scan_io(union, [band.plan for band in scopes])
    tags = table.column("_band").to_numpy()
    reads = []
    for i, band in enumerate(scopes):
        found, band_rows, sum_sq = fold_band(table.filter(tags == i), len(group_by), columns,
                                             band.per_weight)
        first = i == 0
        reads.append(BandRead(found, band_rows, sum_sq, io.rows_scanned if first else 0,
                              io.bytes if first else 0))
    return reads


def fold_on_driver(expected_rows: float | None, schema: dict[str, Any],
                   group_by: Sequence[str]) -> bool:
    """Whether a band's rows are folded on the driver rather than in Spark.

    On the driver when the band is known to be small (at most :data:`DRIVER_FOLD_ROWS` rows)
    and every group column has an atomic type in the table's ``schema`` (Delta's JSON schema:
    Arrow groups neither arrays, maps nor structs).
    """
    if expected_rows is None or expected_rows > DRIVER_FOLD_ROWS:
        return False
    types = {f["name"]: f["type"] for f in schema["fields"]}
    return all(isinstance(types.get(g), str) for g in group_by)


def _fold_in_spark(rows: Any, group_by: Sequence[str], columns: Sequence[str],
                   per_weight: bool, plan: ReadPlan) -> BandRead:
    """The fold of a large band: two aggregations in Spark, a few rows per group collected."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    group_keys = ["_met", *[f"_g{i}" for i in range(len(group_by))]]
    # the last band completes the table: the answer is exact and needs only the totals, so each
    # group is folded as one cluster, without the per-weight shuffle
    cluster_keys = [*group_keys, "_w"] if per_weight else group_keys
    clusters = rows.groupBy(*cluster_keys).agg(
        F.count(F.lit(1)).alias("_n"),
        *[F.coalesce(F.sum(f"_v{i}"), F.lit(0.0)).alias(f"_y{i}") for i in range(len(columns))],
        *[F.count(f"_v{i}").alias(f"_m{i}") for i in range(len(columns))],
    )
    if group_by and per_weight:
        clusters = clusters.withColumn("_nw", F.sum("_n").over(Window.partitionBy("_w")))
    else:  # a weight's rows split at most by the filter: rows of one weight share the indexed
        # values, so a filter on them never splits it, and otherwise the cross term is dropped
        clusters = clusters.withColumn("_nw", F.col("_n"))
    n = F.col("_n").cast("double")
    stats = [
        F.count(F.lit(1)).alias("n_clusters"), F.sum(n).alias("n_s"), F.sum(n * n).alias("n_ss"),
        F.max(n).alias("n_max"), F.sum(n * F.col("_nw")).alias("n_nw"),
    ]
    for i in range(len(columns)):
        y, m = F.col(f"_y{i}"), F.col(f"_m{i}").cast("double")
        stats += [
            F.count(F.when(m > 0, 1)).alias(f"c{i}_clusters"), F.sum(y).alias(f"c{i}_s_y"),
            F.sum(m).alias(f"c{i}_s_m"), F.sum(y * y).alias(f"c{i}_s_yy"),
            F.sum(m * m).alias(f"c{i}_s_mm"), F.sum(y * m).alias(f"c{i}_s_ym"),
            F.sum(F.abs(y)).alias(f"c{i}_s_abs_y"), F.max(F.abs(y)).alias(f"c{i}_max_abs_y"),
            F.max(m).alias(f"c{i}_max_m"),
        ]
    folded = clusters.groupBy(*group_keys).agg(*stats)
    result = folded.collect()
    io = scan_io(folded, [plan])
    groups: dict[tuple[Any, ...], dict[str | None, ClusterStats]] = {}
    band_rows = 0
    sum_sq = 0.0
    for row in result:
        band_rows += int(row["n_s"])
        sum_sq += float(row["n_nw"])
        if not row["_met"]:
            continue
        key = tuple(row[f"_g{i}"] for i in range(len(group_by)))
        count = ClusterStats(int(row["n_clusters"]), float(row["n_s"]), float(row["n_s"]),
                             float(row["n_ss"]), float(row["n_ss"]), float(row["n_ss"]),
                             float(row["n_s"]), float(row["n_max"]), float(row["n_max"]))
        found: dict[str | None, ClusterStats] = {None: count}
        for i, column in enumerate(columns):
            found[column] = ClusterStats(
                int(row[f"c{i}_clusters"]),
                *[float(row[f"c{i}_{name}"] or 0.0) for name in _STATS[1:]])
        groups[key] = found
    return BandRead(groups, band_rows, sum_sq, io.rows_scanned, io.bytes)


#: The columns of an answer after the group columns.
ANSWER_COLUMNS = ("aggregate", "estimate", "low", "high", "fraction", "rows_read", "bytes_read",
                  "tolerance_met", "reason")


def answer_dataframe(spark: Any, table_schema: dict[str, Any], group_by: Sequence[str],
                     rows: list[tuple[Any, ...]]):
    """The answer as a DataFrame: the group columns (with their table types), then
    :data:`ANSWER_COLUMNS`.

    Built from Arrow, the DataFrame is a local relation: collecting it runs no Spark job (a
    DataFrame of Python rows is a parallelized collection, one more job's fixed cost per answer).
    Group columns of nested types, and instants (Spark's rows give those as naive local times,
    which Arrow would read as UTC), keep the Python-rows path.
    """
    import pyarrow as pa
    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    from qbeast.spark.arrow_columns import spark_arrow_schema

    table = {f.name: f for f in StructType.fromJson(table_schema).fields}
    kinds = (StringType(), DoubleType(), DoubleType(), DoubleType(), DoubleType(), LongType(),
             LongType(), BooleanType(), StringType())
    fields = [StructField(g, table[g].dataType, True) for g in group_by]
    fields += [StructField(name, kind, True) for name, kind in zip(ANSWER_COLUMNS, kinds)]
    schema = StructType(fields)
    types = {f["name"]: f["type"] for f in table_schema["fields"]}
    if not all(isinstance(types[g], str) and types[g] != "timestamp" for g in group_by):
        return spark.createDataFrame(rows, schema)
    columns = list(zip(*rows)) if rows else [()] * len(fields)
    arrow_schema = spark_arrow_schema(schema)
    arrays = [pa.array(list(values), type=f.type) for values, f in zip(columns, arrow_schema)]
    return spark.createDataFrame(pa.Table.from_arrays(arrays, schema=arrow_schema), schema)
