"""Handles on the JVM read bridge: its jar, loading it, its Java classes, and the scans it offers.

Python data sources cannot prune columns and ship every row through Python. The bridge is a
small jar (sources in ``jvm/``, built by ``make`` with ``javac`` against the installed pyspark,
shipped inside the wheel as ``qbeast/jars/qbeast-bridge.jar``) with a V1 relation provider named
``qbeast``, a ``FileIndex`` and an optimizer rule. It holds no format logic: the ``FileIndex`` asks
the engine's Python planner which files each scan needs, and the rule asks it for a sample's row
filter.

This module only knows the JVM side: where the jar is (:func:`jar_path`), how a session gets it
(:func:`session_conf` when the engine builds a session, :func:`load_jar` into a running one),
the ``Bridge`` class (:func:`bridge_class`), handing it a planner (:func:`install_planner`), and
the two JVM services writers and readers use without the planner (:func:`run_parquet_format`,
:func:`prefix_scan`). The planner the JVM calls and the choice between the bridge and the Python
data source are the SQL wing's (:mod:`qbeast.spark.sql.python_planner`,
:mod:`qbeast.spark.sql.sources`), which import this module, never the other way round.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from qbeast.errors import QbeastError
from qbeast.spark.settings import SQL_BRIDGE
from qbeast.spark.shipping import is_connect_session

logger = logging.getLogger("qbeast.spark.bridge")

JAR_NAME = "qbeast-bridge.jar"
JAR_PATH = Path(__file__).resolve().parent.parent / "jars" / JAR_NAME
PACKAGE = "io.dbtqbeast.bridge"
EXTENSIONS_CLASS = f"{PACKAGE}.QbeastExtensions"
#: Must equal ``Bridge.PROTOCOL`` of the loaded jar (both sides change together).
PROTOCOL = "3"
#: ``auto`` (default): use the bridge when the jar is there; ``false``: never load it
#: (:data:`qbeast.spark.settings.SQL_BRIDGE`).
SQL_BRIDGE_KEY = SQL_BRIDGE.key

#: The Java interface a planner object implements (:mod:`qbeast.spark.sql.python_planner`).
PLANNER_INTERFACE = f"{PACKAGE}.Planner"
#: The Java interface the engine's SQL writer implements (:mod:`qbeast.spark.sql.sql_writer`).
WRITER_INTERFACE = f"{PACKAGE}.Writer"
#: The Java interface of the table operations SQL can ``CALL`` (:mod:`qbeast.serve.procedures`).
PROCEDURES_INTERFACE = f"{PACKAGE}.Procedures"
#: The catalog that offers them, and the name sessions register it under.
PROCEDURES_CATALOG_CLASS = f"{PACKAGE}.QbeastProcedures"
PROCEDURES_CATALOG = "qbeast_system"
PROCEDURES_CATALOG_KEY = f"spark.sql.catalog.{PROCEDURES_CATALOG}"
#: The bridge's read-only Hadoop file system over signed URLs (scheme ``qbeasthttp``), and the
#: session setting that installs it in every Hadoop configuration of the driver and executors.
#: A Spark Connect client reads this setting to learn that the server can read signed URLs.
SIGNED_FS_CLASS = f"{PACKAGE}.SignedUrlFileSystem"
SIGNED_FS_KEY = "spark.hadoop.fs.qbeasthttp.impl"

_lock = threading.Lock()


class BridgeError(QbeastError):
    """The bridge jar is loaded in the JVM but cannot serve this session (named cause)."""


def jar_path() -> Path | None:
    """The bridge jar of this installation, or None when it was built without a JDK."""
    return JAR_PATH if JAR_PATH.is_file() else None


def bridge_mode(conf: Mapping[str, Any]) -> str:
    """The validated value of :data:`SQL_BRIDGE_KEY` in ``conf`` (``auto`` when absent)."""
    return str(SQL_BRIDGE.read_from(conf))


def _append(existing: str | None, item: str) -> str:
    items = [x for x in (existing or "").split(",") if x.strip()]
    return ",".join(items if item in items else [*items, item])


def session_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` plus the jar on ``spark.jars``, the rule on ``spark.sql.extensions`` and the
    signed-URL file system (:data:`SIGNED_FS_KEY`).

    Unchanged for Spark Connect (``spark.remote``: the server's launch decides its jars), when
    :data:`SQL_BRIDGE_KEY` is ``false`` and when the installation has no jar.
    """
    merged = dict(conf)
    jar = jar_path()
    if "spark.remote" in merged or bridge_mode(merged) == "false" or jar is None:
        return merged
    merged["spark.jars"] = _append(merged.get("spark.jars"), str(jar))
    merged["spark.sql.extensions"] = _append(merged.get("spark.sql.extensions"), EXTENSIONS_CLASS)
    merged.setdefault(SIGNED_FS_KEY, SIGNED_FS_CLASS)
    return merged


# -- the bridge in a session ----------------------------------------------------------------------


def bridge_class(spark: Any) -> Any:
    """``io.dbtqbeast.bridge.Bridge`` in the session's JVM, or None when the jar is not loaded."""
    from py4j.java_gateway import JavaClass

    found = spark._jvm.io.dbtqbeast.bridge.Bridge
    return found if isinstance(found, JavaClass) else None


def load_jar(spark: Any, jar: Path) -> str | None:
    """Add the jar to a running session's driver and executors; None or why it could not."""
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if "MutableURLClassLoader" not in loader.getClass().getName() and "ChildFirstURLClassLoader" not in (
        loader.getClass().getName()
    ):
        return f"the driver's class loader ({loader.getClass().getName()}) cannot take a jar at run time"
    loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
    spark.sparkContext._jsc.addJar(str(jar))
    return None


def load_into_session(spark: Any) -> str | None:
    """Load the jar into the running session; None when loaded, else why the fallback is taken."""
    if SQL_BRIDGE.read(spark) == "false":
        return f"{SQL_BRIDGE_KEY}=false"
    jar = jar_path()
    if jar is None:
        return (f"no bridge jar in this installation ({JAR_PATH} is missing: the package was "
                "built without a JDK; `make` builds it)")
    try:
        return load_jar(spark, jar)
    except Exception as exc:  # noqa: BLE001 - any JVM refusal means: use the Python source
        return f"the bridge jar could not be loaded: {type(exc).__name__}: {exc}"


def install_planner(spark: Any, bridge: Any, planner: Any, writer: Any = None) -> None:
    """Hand ``planner`` (a Py4J callback object implementing :data:`PLANNER_INTERFACE`) and
    ``writer`` (one implementing :data:`WRITER_INTERFACE`) to the JVM's ``Bridge`` and install
    the bridge's rule in this session."""
    from pyspark.java_gateway import ensure_callback_server_started

    with _lock:
        gateway = spark.sparkContext._gateway
        ensure_callback_server_started(gateway)
        bridge.setPlanner(planner)
        if writer is not None:
            bridge.setWriter(writer)
        bridge.install(spark._jsparkSession)


def install_procedures(spark: Any, procedures: Any) -> None:
    """Hand ``procedures`` (a Py4J callback object implementing :data:`PROCEDURES_INTERFACE`) to
    the JVM's ``Bridge`` and register their catalog in this session (sessions of a server get it
    from the launch settings, :data:`PROCEDURES_CATALOG_KEY`)."""
    from pyspark.java_gateway import ensure_callback_server_started

    bridge = bridge_class(spark)
    if bridge is None:
        raise BridgeError("the qbeast bridge jar is not loaded in this session: SQL procedures need "
                          "it (qbeast.register(spark) loads it)")
    with _lock:
        ensure_callback_server_started(spark.sparkContext._gateway)
        bridge.setProcedures(procedures)
    spark.conf.set(PROCEDURES_CATALOG_KEY, PROCEDURES_CATALOG_CLASS)


def python_session(jsession: Any) -> Any:
    """The Python ``SparkSession`` over a JVM session of this driver (a Thrift or Spark Connect
    client's own session, handed to a callback), without making it the process's default."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is not None and active._jsparkSession.equals(jsession):
        return active
    context = SparkContext._active_spark_context
    if context is None:
        raise BridgeError("no SparkContext in this Python process for the statement's session")
    return SparkSession(context, jsession)


def bridge_active(spark: Any) -> bool:
    """True when ``spark`` reads ``qbeast`` through the bridge (planner and rule in place)."""
    if is_connect_session(spark):
        return False
    bridge = bridge_class(spark)
    return bool(bridge is not None and bridge.hasPlanner() and bridge.ruleActive(spark._jsparkSession))


#: The bridge's parquet writer that cuts row groups where a run key changes (see its class).
RUN_PARQUET_FORMAT = f"{PACKAGE}.RunParquetFormat"
#: Its option naming the footer entry that records the runs.
RUN_FOOTER_KEY_OPTION = "runs.footerKey"


def run_parquet_format(spark: Any) -> str | None:
    """The format name of the bridge's run writer when its jar is loaded in ``spark`` (classic
    sessions: its classes reach the executors with the jar), else ``None``.

    The writer writes all columns but the last two ints: a row group ends wherever the first of
    them (the run key) changes, and the footer entry named by :data:`RUN_FOOTER_KEY_OPTION`
    lists per run ``[lowest value of the second, rows]``.
    """
    if is_connect_session(spark) or bridge_class(spark) is None:
        return None
    return RUN_PARQUET_FORMAT


def prefix_scan(spark: Any, files: Sequence[tuple[str, int, int]], schema: Any) -> Any:
    """A DataFrame reading each ``(location, bytes, modification ms)`` file up to ``bytes`` with
    Spark's parquet reader (``schema``: a ``StructType``); ``None`` when the bridge jar is not
    loaded in this session (the caller then reads the files whole)."""
    from pyspark.sql import DataFrame

    from qbeast.storage import file_uri

    if is_connect_session(spark):
        return None
    bridge = bridge_class(spark)
    if bridge is None:
        return None
    payload = json.dumps({"files": [[file_uri(p), int(n), int(t)] for p, n, t in files]})
    return DataFrame(bridge.prefixScan(spark._jsparkSession, payload, schema.json()), spark)


__all__ = [
    "BridgeError",
    "JAR_NAME",
    "PLANNER_INTERFACE",
    "PROCEDURES_CATALOG",
    "PROCEDURES_CATALOG_CLASS",
    "PROCEDURES_CATALOG_KEY",
    "PROCEDURES_INTERFACE",
    "PROTOCOL",
    "WRITER_INTERFACE",
    "install_procedures",
    "python_session",
    "SQL_BRIDGE_KEY",
    "bridge_active",
    "bridge_class",
    "bridge_mode",
    "install_planner",
    "jar_path",
    "load_jar",
    "RUN_FOOTER_KEY_OPTION",
    "RUN_PARQUET_FORMAT",
    "SIGNED_FS_CLASS",
    "SIGNED_FS_KEY",
    "prefix_scan",
    "run_parquet_format",
    "session_conf",
    "load_into_session",
]
