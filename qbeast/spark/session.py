"""The one place where the engine builds Spark sessions.

Why a helper: three settings must hold for every session that writes or reads Qbeast tables, and
forgetting any of them gives silently wrong results rather than errors:

* Spark's Python workers must run the driver's interpreter (``PYSPARK_PYTHON``), otherwise the
  Arrow UDFs of the writer run in another environment without ``qbeast`` installed.
* Dates are transformed as epoch milliseconds of their midnight; qbeast-spark uses the JVM's zone.
  Pinning both the session time zone and the JVM zone to UTC makes that midnight unambiguous.
* Filter pushdown into Python data sources is off by default in Spark; the ``qbeast`` source needs
  it to prune files.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

ENGINE_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def pin_python_workers() -> None:
    """Make Spark's Python workers use this interpreter (unless the user chose one explicitly)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def session_conf(conf: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Engine defaults overlaid with the caller's settings (the caller wins)."""
    merged = dict(ENGINE_DEFAULTS)
    for key, value in (conf or {}).items():
        merged[str(key)] = str(value)
    return merged


def get_or_create_session(
    conf: Mapping[str, Any] | None = None,
    *,
    master: str | None = None,
    app_name: str = "qbeast",
    hive: bool = False,
):
    """Return the active Spark session, creating it with the engine's settings if needed.

    ``master`` defaults to ``spark.master`` from ``conf`` and then to ``local[*]``. With ``hive``
    the session uses a Hive metastore (the dbt adapter keeps it inside the dbt project folder).
    """
    pin_python_workers()
    from pyspark.sql import SparkSession

    merged = session_conf(conf)
    builder = SparkSession.builder.appName(app_name)
    if "spark.remote" not in merged:
        builder = builder.master(master or merged.pop("spark.master", "local[*]"))
    for key, value in merged.items():
        builder = builder.config(key, value)
    if hive:
        builder = builder.enableHiveSupport()
    return builder.getOrCreate()
