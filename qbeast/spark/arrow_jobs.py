"""Running Python functions over Arrow batches inside Spark tasks.

Why not ``DataFrame.mapInArrow`` directly: in pyspark 4.x that method builds its UDF through
``pandas_udf``, which refuses to run when pandas is not installed, although an Arrow map function
never touches pandas (neither on the driver nor in the Python workers), and it refers to the input
columns by unquoted name, which fails for names containing backticks. The engine does not depend
on pandas and must accept any column name, so :func:`map_in_arrow` creates the same
``SQL_MAP_ARROW_ITER_UDF`` expression itself on classic sessions (Spark Connect DataFrames, which
have no JVM handle, go through the public method).
"""
from __future__ import annotations

from typing import Any

from qbeast.core.sql import quote_identifier
from qbeast.index.batches import ArrowMapFunction


def map_in_arrow(df: Any, func: ArrowMapFunction, schema: Any) -> Any:
    """``df.mapInArrow(func, schema)`` that also works on a classic session without pandas."""
    if not hasattr(df, "_jdf"):
        return df.mapInArrow(func, schema)
    from pyspark.sql import DataFrame
    from pyspark.sql.udf import _create_udf
    from pyspark.util import PythonEvalType

    udf = _create_udf(func, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    column = udf(*[df[quote_identifier(name)] for name in df.columns])
    return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)

