"""The Python planner the JVM read bridge calls: Spark SQL's questions answered by the engine.

The bridge's ``FileIndex`` and optimizer rule (``jvm/``) hold no format logic; they call a Java
interface, ``io.dbtqbeast.bridge.Planner``, which :class:`PythonPlanner` implements as a Py4J
callback object on the driver. Each method takes and returns flat JSON strings (Py4J turns
arrays into per-element proxies) and delegates to :mod:`qbeast.spark.sql.sql_planner`, the plain
Python planning; errors come back as ``{"error": message}`` for the JVM to raise in the query
that asked.

The planning modules are imported inside the calls: this module is imported with every session
the engine builds (:mod:`qbeast.spark.sql.sources`), and the log layer they pull in would slow
each of them down (``tests/unit/test_layering.py``).
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any

from qbeast.errors import QbeastError
from qbeast.spark.bridge import PLANNER_INTERFACE

logger = logging.getLogger("qbeast.spark.bridge")  # the planner's errors are logged as before

_lock = threading.Lock()
_planner: PythonPlanner | None = None


def bridge_answer(call: str, action: Any) -> str:
    """Run a call of the JVM bridge (planner or writer); errors become ``{"error": message}`` for
    the JVM to raise in the statement that asked."""
    try:
        return json.dumps(action())
    except QbeastError as exc:
        return json.dumps({"error": f"qbeast: {exc}"})
    except Exception as exc:  # noqa: BLE001 - reported to the query that asked, with its type
        logger.exception("qbeast SQL planner: %s failed", call)
        return json.dumps({"error": f"qbeast: {call} failed: {type(exc).__name__}: {exc}"})


class PythonPlanner:
    """``io.dbtqbeast.bridge.Planner`` implemented in Python (a Py4J callback object).

    Py4J runs each call in its own Python thread; :mod:`qbeast.spark.sql.sql_planner` is
    thread-safe.
    """

    class Java:
        implements = [PLANNER_INTERFACE]

    def describe(self, options_json: str, catalog_schema_json: str) -> str:
        from qbeast.storage import file_uri
        from qbeast.spark.file_access import FileAccess, current_session, is_remote
        from qbeast.spark.sql import sql_planner

        def run() -> dict[str, Any]:
            schema = json.loads(catalog_schema_json) if catalog_schema_json else None
            described = sql_planner.describe(json.loads(options_json), schema)
            location = described.table.location
            if is_remote(location):  # Spark opens local copies (listFiles)
                access = FileAccess.decide(current_session(), location)  # once per call
                access.check_bridge()
                location = access.mirror().files_dir
            return {
                "table": json.dumps(described.table.to_json()),
                "root": file_uri(location),
                "schema": described.schema,
                "sampleFilter": described.sample_filter,
                "description": described.table.describe(),
            }

        return bridge_answer("describe", run)

    def listFiles(self, table_json: str, filters_json: str, time_zone: str) -> str:  # noqa: N802 - Java name
        from qbeast.storage import file_uri
        from qbeast.spark.file_access import FileAccess, current_session
        from qbeast.spark.sql import sql_planner

        def run() -> dict[str, Any]:
            table = sql_planner.TableRef.from_json(json.loads(table_json))
            files = sql_planner.list_files(table, json.loads(filters_json), time_zone)
            access = FileAccess.decide(current_session(), table.location)  # once per scan
            opened = access.bridge_readable([f.path for f in files], [f.size for f in files])
            return {"files": [[file_uri(p), f.bytes_to_read, f.modification_time]
                              for p, f in zip(opened, files)]}

        return bridge_answer("listFiles", run)

    def sampleFilter(self, table_json: str, lower: float, upper: float) -> str:  # noqa: N802
        from qbeast.spark.sql import sql_planner

        def run() -> dict[str, Any]:
            table = sql_planner.TableRef.from_json(json.loads(table_json))
            return {"sql": sql_planner.sample_filter(table, float(lower), float(upper))}

        return bridge_answer("sampleFilter", run)

    def tableSize(self, table_json: str) -> str:  # noqa: N802
        from qbeast.spark.sql import sql_planner

        def run() -> dict[str, Any]:
            return {"bytes": sql_planner.table_size(sql_planner.TableRef.from_json(json.loads(table_json)))}

        return bridge_answer("tableSize", run)


def python_planner() -> PythonPlanner:
    """The process's one planner object (the JVM keeps a reference to it: one is enough)."""
    global _planner
    with _lock:
        if _planner is None:
            _planner = PythonPlanner()
        return _planner


__all__ = ["PythonPlanner", "bridge_answer", "python_planner"]
