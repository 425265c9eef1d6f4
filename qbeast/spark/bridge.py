"""The JVM read bridge: how ``USING qbeast`` / ``format("qbeast")`` get Spark's native parquet scan.

Python data sources cannot prune columns and ship every row through Python. The bridge is a
small jar (sources in ``jvm/``, built by ``make`` with ``javac`` against the installed pyspark,
shipped inside the wheel as ``qbeast/jars/qbeast-bridge.jar``) with a V1 relation provider named
``qbeast``, a ``FileIndex`` and an optimizer rule. It holds no format logic: the ``FileIndex`` asks
the Python planner of :mod:`qbeast.spark.read.sql_planner` (registered here as a Py4J callback object on
the driver) which files each scan needs, and the rule asks it for a sample's row filter.

:func:`register` decides, once per session, which implementation of ``qbeast`` the session uses:

* **the bridge** when the session is a classic one (a JVM in this process) and the jar is
  loaded or loadable: :func:`session_conf` puts it on ``spark.jars`` and ``spark.sql.extensions``
  when the engine builds a session, and :func:`register` adds it to a running session;
* **the Python data source** (:mod:`qbeast.spark.read.datasource`) otherwise: Spark Connect sessions
  (the planner would have to run in the server's driver), no jar in the installation (built
  without a JDK), ``spark.qbeast.sqlBridge=false``, or a JVM that cannot load it. One log line
  says why.

Both cannot hold the name ``qbeast`` in one session (Spark refuses a Python source named like a
JVM one with ``DATA_SOURCE_ALREADY_EXISTS``), so a session where the jar is loaded always uses the
bridge; the Python source stays available there as ``qbeast_python`` through
:func:`qbeast.spark.read.datasource.register_python_source` (for comparisons).
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

logger = logging.getLogger("qbeast.spark.bridge")

JAR_NAME = "qbeast-bridge.jar"
JAR_PATH = Path(__file__).resolve().parent.parent / "jars" / JAR_NAME
PACKAGE = "io.dbtqbeast.bridge"
EXTENSIONS_CLASS = f"{PACKAGE}.QbeastExtensions"
#: Must equal ``Bridge.PROTOCOL`` of the loaded jar (both sides change together).
PROTOCOL = "2"
#: ``auto`` (default): use the bridge when the jar is there; ``false``: never load it
#: (:data:`qbeast.spark.settings.SQL_BRIDGE`).
SQL_BRIDGE_KEY = SQL_BRIDGE.key

JVM = "jvm"
PYTHON = "python"

_lock = threading.Lock()
_planner: PythonPlanner | None = None
_reported: set[str] = set()


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
    """``conf`` plus the jar on ``spark.jars`` and the rule on ``spark.sql.extensions``.

    Unchanged for Spark Connect (``spark.remote``: the server's launch decides its jars), when
    :data:`SQL_BRIDGE_KEY` is ``false`` and when the installation has no jar.
    """
    merged = dict(conf)
    jar = jar_path()
    if "spark.remote" in merged or bridge_mode(merged) == "false" or jar is None:
        return merged
    merged["spark.jars"] = _append(merged.get("spark.jars"), str(jar))
    merged["spark.sql.extensions"] = _append(merged.get("spark.sql.extensions"), EXTENSIONS_CLASS)
    return merged


# -- the planner the JVM calls ------------------------------------------------------------------


def _answer(call: str, action: Any) -> str:
    """Run a planner call; errors become ``{"error": message}`` for the JVM to raise."""
    try:
        return json.dumps(action())
    except QbeastError as exc:
        return json.dumps({"error": f"qbeast: {exc}"})
    except Exception as exc:  # noqa: BLE001 - reported to the query that asked, with its type
        logger.exception("qbeast SQL planner: %s failed", call)
        return json.dumps({"error": f"qbeast: {call} failed: {type(exc).__name__}: {exc}"})


class PythonPlanner:
    """``io.dbtqbeast.bridge.Planner`` implemented in Python (a Py4J callback object).

    Py4J runs each call in its own Python thread; :mod:`qbeast.spark.read.sql_planner` is thread-safe.
    """

    class Java:
        implements = [f"{PACKAGE}.Planner"]

    def describe(self, options_json: str, catalog_schema_json: str) -> str:
        from qbeast.delta.storage import file_uri
        from qbeast.spark.read import sql_planner

        def run() -> dict[str, Any]:
            schema = json.loads(catalog_schema_json) if catalog_schema_json else None
            described = sql_planner.describe(json.loads(options_json), schema)
            return {
                "table": json.dumps(described.table.to_json()),
                "root": file_uri(described.table.location),
                "schema": described.schema,
                "sampleFilter": described.sample_filter,
                "description": described.table.describe(),
            }

        return _answer("describe", run)

    def listFiles(self, table_json: str, filters_json: str, time_zone: str) -> str:  # noqa: N802 - Java name
        from qbeast.delta.storage import file_uri
        from qbeast.spark.read import sql_planner

        def run() -> dict[str, Any]:
            table = sql_planner.TableRef.from_json(json.loads(table_json))
            files = sql_planner.list_files(table, json.loads(filters_json), time_zone)
            return {"files": [[file_uri(f.path), f.bytes_to_read, f.modification_time] for f in files]}

        return _answer("listFiles", run)

    def sampleFilter(self, table_json: str, lower: float, upper: float) -> str:  # noqa: N802
        from qbeast.spark.read import sql_planner

        def run() -> dict[str, Any]:
            table = sql_planner.TableRef.from_json(json.loads(table_json))
            return {"sql": sql_planner.sample_filter(table, float(lower), float(upper))}

        return _answer("sampleFilter", run)

    def tableSize(self, table_json: str) -> str:  # noqa: N802
        from qbeast.spark.read import sql_planner

        def run() -> dict[str, Any]:
            return {"bytes": sql_planner.table_size(sql_planner.TableRef.from_json(json.loads(table_json)))}

        return _answer("tableSize", run)


# -- choosing the implementation ------------------------------------------------------------------


def _report(path: str, reason: str, level: int = logging.INFO) -> None:
    """One log line per reason and process (dbt asks for a session per statement)."""
    if reason not in _reported:
        _reported.add(reason)
        logger.log(level, "qbeast SQL source: %s (%s)", path, reason)


def _bridge_class(spark: Any) -> Any:
    """``io.dbtqbeast.bridge.Bridge`` in the session's JVM, or None when the jar is not loaded."""
    from py4j.java_gateway import JavaClass

    found = spark._jvm.io.dbtqbeast.bridge.Bridge
    return found if isinstance(found, JavaClass) else None


def _load_jar(spark: Any, jar: Path) -> str | None:
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


def register(spark: Any) -> str:
    """Make ``format("qbeast")`` and ``USING qbeast`` readable in ``spark``; returns the path taken.

    ``"jvm"``: the bridge (native parquet scans planned by the engine); ``"python"``: the Python
    data source. Idempotent and cheap: call it once per session (sessions made with
    ``newSession()`` need their own call, as the rule and registrations are per session).
    """
    from qbeast.spark.read.datasource import register_python_source
    from qbeast.spark.session import is_connect_session

    if is_connect_session(spark):
        _report(PYTHON, "Spark Connect session: the bridge's planner must run in the driver's Python "
                "process, which is the server's here")
        register_python_source(spark)
        return PYTHON
    bridge = _bridge_class(spark)
    if bridge is None:
        reason = _why_not_loadable(spark)
        bridge = _bridge_class(spark) if reason is None else None
        if bridge is None:
            reason = reason or "the jar was added but its classes are not visible to the driver"
            _report(PYTHON, reason, logging.INFO if SQL_BRIDGE_KEY in reason else logging.WARNING)
            register_python_source(spark)
            return PYTHON
    protocol = str(bridge.protocol())
    if protocol != PROTOCOL:
        raise BridgeError(
            f"the qbeast bridge jar loaded in this JVM speaks protocol {protocol}, this engine "
            f"speaks {PROTOCOL}: an older dbt-qbeast's jar is on spark.jars; remove it or rebuild "
            "the session with qbeast.spark.session.get_or_create_session"
        )
    _install_planner(spark, bridge)
    _report(JVM, "native parquet scans planned by the engine through the JVM read bridge")
    return JVM


def _why_not_loadable(spark: Any) -> str | None:
    """Load the jar into the running session; None when loaded, else why the fallback is taken."""
    if SQL_BRIDGE.read(spark) == "false":
        return f"{SQL_BRIDGE_KEY}=false"
    jar = jar_path()
    if jar is None:
        return (f"no bridge jar in this installation ({JAR_PATH} is missing: the package was "
                "built without a JDK; `make` builds it)")
    try:
        return _load_jar(spark, jar)
    except Exception as exc:  # noqa: BLE001 - any JVM refusal means: use the Python source
        return f"the bridge jar could not be loaded: {type(exc).__name__}: {exc}"


def _install_planner(spark: Any, bridge: Any) -> None:
    """The Python planner in the JVM (once per process) and the rule in this session."""
    global _planner
    from pyspark.java_gateway import ensure_callback_server_started

    with _lock:
        gateway = spark.sparkContext._gateway
        ensure_callback_server_started(gateway)
        if _planner is None:
            _planner = PythonPlanner()
        bridge.setPlanner(_planner)
        bridge.install(spark._jsparkSession)


def bridge_active(spark: Any) -> bool:
    """True when ``spark`` reads ``qbeast`` through the bridge (planner and rule in place)."""
    from qbeast.spark.session import is_connect_session

    if is_connect_session(spark):
        return False
    bridge = _bridge_class(spark)
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
    from qbeast.spark.session import is_connect_session

    if is_connect_session(spark) or _bridge_class(spark) is None:
        return None
    return RUN_PARQUET_FORMAT


def prefix_scan(spark: Any, files: Sequence[tuple[str, int, int]], schema: Any) -> Any:
    """A DataFrame reading each ``(location, bytes, modification ms)`` file up to ``bytes`` with
    Spark's parquet reader (``schema``: a ``StructType``); ``None`` when the bridge jar is not
    loaded in this session (the caller then reads the files whole)."""
    from pyspark.sql import DataFrame

    from qbeast.delta.storage import file_uri
    from qbeast.spark.session import is_connect_session

    if is_connect_session(spark):
        return None
    bridge = _bridge_class(spark)
    if bridge is None:
        return None
    payload = json.dumps({"files": [[file_uri(p), int(n), int(t)] for p, n, t in files]})
    return DataFrame(bridge.prefixScan(spark._jsparkSession, payload, schema.json()), spark)


__all__ = [
    "BridgeError",
    "JAR_NAME",
    "JVM",
    "PYTHON",
    "PythonPlanner",
    "SQL_BRIDGE_KEY",
    "bridge_active",
    "bridge_mode",
    "jar_path",
    "RUN_FOOTER_KEY_OPTION",
    "RUN_PARQUET_FORMAT",
    "prefix_scan",
    "register",
    "run_parquet_format",
    "session_conf",
]
