"""The Python writer the JVM bridge calls: SQL and DataFrame writes to the ``qbeast`` source.

``CREATE TABLE t USING qbeast OPTIONS ('columnsToIndex'='a,b') AS SELECT ...``,
``df.write.format("qbeast").option("columnsToIndex", "a,b").save(path)`` and ``INSERT INTO`` /
``INSERT OVERWRITE`` on a Qbeast catalog table reach the bridge's ``QbeastSource`` in the JVM,
which hands the statement's rows and options to ``io.dbtqbeast.bridge.Writer``: this module's
:class:`PythonWriter`, a Py4J callback object on the driver. It writes with
:func:`qbeast.spark.write.writer.write`, the engine's one indexed write, so a SQL client of
``qbeast serve`` lays out and commits a table exactly as ``qbeast.write`` or a dbt model does.

Options are matched case-insensitively (Spark and the metastore may change their case):

========================  ==============================================================
``path``                  the table's location (Spark sets it: a catalog table's LOCATION or
                          warehouse folder, the path of ``save``)
``columnsToIndex``        comma-separated indexed columns (``a,b`` or ``a:linear,b:hashing``);
                          needed to create a table, defaults to the table's on append
``cubeSize``              the desired cube size (rows)
========================  ==============================================================

The read options of the source (``qbeastVersionAsOf``, ...) are accepted and ignored, because a
catalog table's options reach every statement on it; any other option is refused by name.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.spark.bridge import WRITER_INTERFACE, python_session

logger = logging.getLogger("qbeast.spark.write")

#: Spark's save modes and what the engine does with each.
SAVE_MODES = ("Append", "Overwrite", "ErrorIfExists", "Ignore")
#: The write options a SQL statement or ``df.write.format("qbeast")`` may give.
WRITE_OPTIONS = ("path", "columnsToIndex", "cubeSize")


def write_arguments(options: Mapping[str, str]) -> tuple[str, str | None, int | None]:
    """``(path, columns_to_index, cube_size)`` from a statement's options; errors name the option."""
    from qbeast.spark.read.datasource import KNOWN_OPTIONS

    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    allowed = {o.lower() for o in (*WRITE_OPTIONS, *KNOWN_OPTIONS)}
    unknown = sorted(k for k in lowered if k not in allowed)
    if unknown:
        raise InvalidOptionError(
            f"unknown option {unknown[0]!r} for a write to the qbeast source; allowed options: "
            f"{list(WRITE_OPTIONS)}", option=unknown[0], value=lowered[unknown[0]],
            allowed=list(WRITE_OPTIONS))
    path = lowered.get("path", "").strip()
    if not path:
        raise InvalidOptionError("a write to the qbeast source needs the table's location: "
                                 "df.write.format('qbeast').save('<path>'), or a catalog table")
    columns = lowered.get("columnstoindex", "").strip() or None
    size_text = lowered.get("cubesize", "").strip()
    cube_size = None
    if size_text:
        try:
            cube_size = int(size_text)
        except ValueError:
            raise InvalidOptionError(f"option cubeSize must be a positive integer (rows), got {size_text!r}",
                                     option="cubeSize", value=size_text) from None
    return path, columns, cube_size


def run_write(options: Mapping[str, str], mode: str, df: Any) -> dict[str, Any]:
    """Write ``df`` as Spark's save ``mode`` asks; the answer describes what was committed."""
    from qbeast.checks import check_one_of
    from qbeast.spark.write.table_state import TableState
    from qbeast.spark.write.writer import write

    mode = check_one_of("mode", mode, SAVE_MODES, ignore_case=True)
    path, columns, cube_size = write_arguments(options)
    state = TableState.load(path)
    if mode.lower() in ("errorifexists", "ignore") and state.exists:
        if mode.lower() == "ignore":
            return {"written": f"nothing: a table exists at {path} (mode Ignore)"}
        raise InvalidOptionError(f"a table already exists at {path}; write with mode 'append' or "
                                 "'overwrite'", option="mode", value=mode, allowed=["append", "overwrite"])
    engine_mode = "append" if mode.lower() == "append" else "overwrite"
    latest = state.latest_revision if state.exists and state.is_qbeast else None
    if columns is None and latest is not None and latest.column_transformers:
        # INSERT OVERWRITE on a table registered by location: keep the table's index
        columns = ",".join(t.spec for t in latest.column_transformers)
        cube_size = cube_size or latest.desired_cube_size
    if columns is None and latest is None:
        raise InvalidOptionError(
            f"a new Qbeast table at {path} needs the option columnsToIndex, e.g. "
            "OPTIONS ('columnsToIndex'='a,b') or .option('columnsToIndex', 'a,b')",
            option="columnsToIndex", value=None)
    result = write(df, path, columns_to_index=columns, cube_size=cube_size, mode=engine_mode)
    logger.info("qbeast SQL write to %s (%s): version %s, %d rows, %d files", path, engine_mode,
                result.version, result.rows, result.file_count)
    if result.version is None:
        return {"written": "no rows: nothing committed"}
    return {"written": f"version {result.version}: {result.rows} rows in {result.file_count} files"}


def check_new_table_location(location: str) -> dict[str, Any]:
    """``CREATE TABLE ... AS SELECT`` may create a table at ``location`` only when nothing is
    there, as Spark's own check says for a local folder; the engine's storage looks (an object
    store without a Hadoop connector is out of Spark's reach)."""
    from qbeast.storage import storage_for

    storage = storage_for(location)
    root = storage.resolve(location)
    try:
        held = [entry.path for entry in storage.list_dir(root)][:3]
    except FileNotFoundError:  # a local folder that does not exist yet
        held = []
    if held:
        raise InvalidOptionError(
            f"CREATE TABLE ... AS SELECT cannot create a table at {location}: the location is not "
            f"empty (it holds {', '.join(held)}); choose an empty location, or register the "
            "table that is there with CREATE TABLE ... USING qbeast LOCATION and INSERT into it",
            option="location", value=location)
    return {"empty": True}


def _dataframe(jdf: Any) -> Any:
    """The Python DataFrame of the statement's Dataset, bound to the session that runs it (a
    Thrift or Spark Connect client's own session, not necessarily the server's)."""
    from pyspark.sql import DataFrame

    return DataFrame(jdf, python_session(jdf.sparkSession()))


class PythonWriter:
    """``io.dbtqbeast.bridge.Writer`` implemented in Python (a Py4J callback object)."""

    class Java:
        implements = [WRITER_INTERFACE]

    def write(self, options_json: str, mode: str, data: Any) -> str:
        from qbeast.spark.sql.python_planner import bridge_answer

        return bridge_answer("write", lambda: run_write(json.loads(options_json), str(mode), _dataframe(data)))

    def newTableAt(self, location: str) -> str:  # noqa: N802 - the Java interface's name
        from qbeast.spark.sql.python_planner import bridge_answer

        return bridge_answer("newTableAt", lambda: check_new_table_location(str(location)))


_writer = PythonWriter()


def python_writer() -> PythonWriter:
    """The process's one writer object (the JVM keeps a reference to it)."""
    return _writer


__all__ = ["PythonWriter", "SAVE_MODES", "WRITE_OPTIONS", "check_new_table_location", "python_writer",
           "run_write", "write_arguments"]
