"""The two columns every indexing job computes in Spark: the row weight and the row's cube and file.

The weight is Spark's own ``hash()`` over the indexed columns, evaluated in the JVM next to the
data (:func:`weight_column`, spelled once in :func:`qbeast.core.sql.row_weight_sql`). The cube
and file come from an Arrow UDF (:func:`assignment_udf`) that receives only the indexed columns
and the weight — never the whole row — and runs :meth:`qbeast.index.assignment.WritePlan.assign`.
"""
from __future__ import annotations

import warnings
from typing import Any

from qbeast.core.revision import Revision
from qbeast.core.sql import row_weight_sql
from qbeast.index.assignment import WritePlan
from qbeast.index.points import table_points
from qbeast.index.tally import BlockTally, DictTally, FlagTally, batch_blocks, batch_flags


def weight_column(columns: Any) -> Any:
    """The row weight as a Spark ``Column``: ``hash(<indexed columns in revision order>)``."""
    from pyspark.sql import functions as F

    return F.expr(row_weight_sql(columns))


def assignment_udf(revision: Revision, plan: WritePlan, *, tally: Any = None,
                   flags: Any = None) -> Any:
    """Arrow UDF: (indexed columns..., weight) -> struct<file, cube> (only those cross to Python).

    ``tally``, a Spark accumulator of :class:`qbeast.index.tally.BlockTally`, receives per batch
    the row count and min weight of every (file, cube) met. With ``flags`` (a
    :class:`qbeast.index.tally.FlagTally` accumulator) the UDF takes one more argument, the
    row's ``non_finite_mask`` (:mod:`qbeast.spark.write.describe`), and ORs it per file into
    ``flags``.
    """
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.util import PythonEvalType

    names = list(revision.columns)

    def assign(*arrays: pa.Array) -> pa.Array:
        masks = None
        if flags is not None:
            *arrays, mask_array = arrays  # type: ignore[assignment]
            masks = mask_array.to_numpy(zero_copy_only=False)
        table = pa.Table.from_arrays(list(arrays[:-1]), names=names)
        coords = table_points(revision, table, names)
        weights = arrays[-1].to_numpy(zero_copy_only=False)
        cubes, files = plan.assign(coords, weights)
        if tally is not None:
            tally.add(batch_blocks(files, cubes, weights))
        if masks is not None:
            found = batch_flags(files, masks)
            if found:
                flags.add(found)
        return pa.StructArray.from_arrays(
            [pa.array(files, pa.int32()), pa.array(cubes, pa.int64())], names=["file", "cube"]
        )

    with warnings.catch_warnings():  # pyspark prefers type hints; the eval type is explicit
        warnings.simplefilter("ignore", UserWarning)
        return F.arrow_udf(
            assign, "struct<file:int,cube:bigint>", PythonEvalType.SQL_SCALAR_ARROW_UDF
        )


# -- the accumulators the UDF fills ---------------------------------------------------------------


def _new_tally(spark: Any, param: DictTally) -> Any:
    """A fresh accumulator, or ``None`` where the SparkContext is unreachable (Spark Connect)."""
    try:
        return spark.sparkContext.accumulator({}, param)
    except Exception:  # noqa: BLE001 - Connect sessions have no SparkContext
        return None


def new_block_tally(spark: Any) -> Any:
    """A fresh :class:`BlockTally` accumulator for :func:`assignment_udf`'s ``tally``, or ``None``
    on Spark Connect (the files are then described by a scan)."""
    return _new_tally(spark, BlockTally())


def new_flag_tally(spark: Any) -> Any:
    """A fresh :class:`FlagTally` accumulator for :func:`assignment_udf`'s ``flags``, or ``None``
    on Spark Connect."""
    return _new_tally(spark, FlagTally())
