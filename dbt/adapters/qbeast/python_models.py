"""Python models on the embedded session: dbt's compiled script run in the dbt process.

dbt compiles a Python model into a script that defines ``model(dbt, session)`` and the ``dbtObj``
helper (``ref``, ``source``, ``config``, ``this``, ``is_incremental``). dbt-spark sends such
scripts to a Databricks cluster; the qbeast adapter's session lives in the dbt process, so the
script runs here with ``spark`` bound to that session, and the DataFrame it returns is what the
materialization writes (a Qbeast table, or a Spark table for ``materialized='table'``).
"""
from __future__ import annotations

import traceback
from typing import Any, Dict

from dbt_common.exceptions import DbtRuntimeError


def run_script(spark: Any, code: str, model: str) -> Dict[str, Any]:
    """Execute a compiled Python model script with ``spark`` in scope; return its namespace."""
    namespace: Dict[str, Any] = {"spark": spark, "__name__": f"dbt_python_model_{model}"}
    try:
        exec(compile(code, f"<python model {model}>", "exec"), namespace)  # noqa: S102 - the user's model
    except Exception as exc:
        raise DbtRuntimeError(f"model {model}: the Python model failed: {_summary(exc)}") from exc
    return namespace


def model_dataframe(spark: Any, code: str, model: str) -> Any:
    """The Spark DataFrame a Python model's ``model(dbt, session)`` returns.

    pandas and pandas-on-Spark results are converted to Spark DataFrames, as dbt-spark does.
    """
    namespace = run_script(spark, code, model)
    if "model" not in namespace or "dbtObj" not in namespace:
        raise DbtRuntimeError(
            f"model {model}: a Python model must define model(dbt, session) returning a DataFrame"
        )
    try:
        result = namespace["model"](namespace["dbtObj"](spark.table), spark)
    except Exception as exc:
        raise DbtRuntimeError(f"model {model}: the Python model failed: {_summary(exc)}") from exc
    return to_spark_dataframe(spark, result, model)


def to_spark_dataframe(spark: Any, result: Any, model: str) -> Any:
    from pyspark.sql import DataFrame

    if isinstance(result, DataFrame):
        return result
    try:
        import pyspark.pandas as ps

        if isinstance(result, ps.DataFrame):
            return result.to_spark()
    except ImportError:  # pragma: no cover - pandas-on-Spark needs pandas, a dependency
        pass
    import pandas as pd  # type: ignore[import-untyped]  # no stubs installed

    if isinstance(result, pd.DataFrame):
        return spark.createDataFrame(result)
    raise DbtRuntimeError(
        f"model {model}: the Python model returned {type(result).__name__}; allowed values: a "
        "Spark, pandas or pandas-on-Spark DataFrame"
    )


def _summary(exc: BaseException) -> str:
    """The exception and the last line of the model's code it came from."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<python model")]
    where = f" (line {frames[-1].lineno} of the compiled model)" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
