"""The table operations as SQL procedures: ``CALL qbeast_system.optimize(table => 'events')``.

SQL-only clients (beeline, BI tools, PyHive, a Spark Connect notebook of ``qbeast serve``) have no
Python to call :class:`qbeast.QbeastTable` with. Spark 4's stored procedures give them the same
operations: the bridge's catalog ``qbeast_system`` (``io.dbtqbeast.bridge.QbeastProcedures``)
declares the procedures this module lists and hands each call to :class:`SqlProcedures`, a Py4J
callback object in the driver, which runs the operation with the engine and returns its result
as rows. ``qbeast serve`` offers them to every client; a session of one's own gets them from
:func:`enable_sql_procedures`.

``table`` is a catalog name (resolved in the calling session's catalog, its current database
included) or a table location. Every procedure but ``history`` returns the operation's summary,
one row per line (column ``line``); ``history`` returns one row per commit. The row-level ones
(``delete``, ``update``, ``merge``, ``delete_insert``, ``replace_where``) are SQL's way to what
``MERGE INTO`` would do (Spark's grammar gives it to V2 tables only, and the bridge's relation is
a V1 one); ``UPDATE`` and ``DELETE FROM`` statements on a qbeast table run as ``update`` and
``delete`` (the bridge's ``RowLevelStatements`` rewrites them). Their ``source`` is a query
(``select ...``) or a table.

This module sits above the table API (it calls it) and the Spark layer, which only knows the JVM
side of the callback (:func:`qbeast.spark.bridge.install_procedures`), beside the server that
offers it to every client (:mod:`qbeast.serve.server`).
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.operations.common import OperationResult


@dataclass(frozen=True)
class Parameter:
    """One parameter: its name, SQL type (string, long, double, boolean) and default (SQL text;
    None: required)."""

    name: str
    type: str
    default: str | None = None


@dataclass(frozen=True)
class Procedure:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    run: Callable[[Any, str, dict[str, Any]], Any]
    #: False: ``table`` is handed to the procedure as given (the catalog name it creates, or a
    #: name it resolves itself), not resolved to a location
    resolves_table: bool = True


#: How a procedure answers: ``lines`` (column ``line``, one row per line of the summary, the
#: default) or ``json`` (one row: column ``result``, the result's ``to_dict()`` as JSON, and
#: column ``summary``, its text): for tools that read the answer (dbt's ``method: thrift``).
OUTPUTS = ("lines", "json")


def _lines(result: Any) -> dict[str, Any]:
    return {"columns": [{"name": "line", "type": "string"}],
            "rows": [[line] for line in result.summary_lines()]}


def _json(result: Any) -> dict[str, Any]:
    return {"columns": [{"name": "result", "type": "string"}, {"name": "summary", "type": "string"}],
            "rows": [[json.dumps(result.to_dict(), sort_keys=True, default=str), str(result)]]}


def _table(spark: Any, path: str) -> Any:
    from qbeast.table import QbeastTable

    return QbeastTable.for_path(spark, path)


def _optimize(spark: Any, path: str, args: dict[str, Any]) -> Any:
    revision = args["revision_id"]
    return _table(spark, path).optimize(
        revision_id=None if revision is None else int(revision), fraction=float(args["fraction"]),
        max_rewrite_ratio=args["max_rewrite_ratio"], merge_revisions=bool(args["merge_revisions"]),
        files=None if args["files"] is None else _json_list("files", args["files"]))


def _json_list(name: str, text: Any) -> list[str]:
    """A procedure argument that is a JSON list of strings (file names may hold commas)."""
    try:
        value = json.loads(str(text))
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidOptionError(f"procedure argument {name} must be a JSON list of strings, "
                                 f"e.g. '[\"a\", \"b\"]'; got {text!r}")
    return value


def _vacuum(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.maintenance import vacuum_table

    return vacuum_table(path, retention_hours=args["retention_hours"], dry_run=bool(args["dry_run"]),
                        allow_short_retention=bool(args["allow_short_retention"]))


def _history(spark: Any, path: str, args: dict[str, Any]) -> dict[str, Any]:
    limit = args["limit"]
    history = _table(spark, path).history(limit=None if limit is None else int(limit))
    columns = [("version", "long"), ("timestamp", "long"), ("operation", "string"),
               ("parameters", "string"), ("metrics", "string"), ("user_metadata", "string")]
    rows = [[e.version, e.timestamp, e.operation, json.dumps(e.parameters, sort_keys=True),
             json.dumps(e.metrics, sort_keys=True), e.user_metadata] for e in history.entries]
    return {"columns": [{"name": n, "type": t} for n, t in columns], "rows": rows}


def _index_metrics(spark: Any, path: str, args: dict[str, Any]) -> Any:
    revision = args["revision_id"]
    return _table(spark, path).index_metrics(None if revision is None else int(revision))


def _convert(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.convert import convert_to_qbeast

    size = args["cube_size"]
    return convert_to_qbeast(spark, path, args["columns_to_index"],
                             cube_size=None if size is None else int(size),
                             source_format=args["source_format"])


def _upgrade(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.upgrade import upgrade_format

    return upgrade_format(path, dry_run=bool(args["dry_run"]))


_KEYS = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*(\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*$")
#: A query, after any leading ``--`` and ``/* */`` comments (a dbt model's SQL starts with them).
_QUERY = re.compile(r"^(\s*(--[^\n]*(\n|$)|/\*.*?\*/))*\s*\(?\s*(select|with|from|values|table)\b",
                    re.IGNORECASE | re.DOTALL)


def _source(spark: Any, source: Any) -> Any:
    """The rows a row-level procedure takes: a query (``select ...``) or a table name."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidOptionError("procedure argument source must be a query (select ...) or a table name")
    return spark.sql(source) if _QUERY.match(source) else spark.table(source.strip())


def _on(on: Any) -> str | list[str]:
    """Key columns (``id`` or ``a, b``: compared with ``=``) or a SQL condition over the aliases
    ``target`` and ``source``."""
    if not isinstance(on, str) or not on.strip():
        raise InvalidOptionError("procedure argument on must name the key columns (id or a, b) or be a "
                                 "condition over target and source")
    return [c.strip() for c in on.split(",")] if _KEYS.match(on) else on


def _columns(text: Any) -> list[str] | None:
    return None if text is None else [c.strip() for c in str(text).split(",") if c.strip()]


def _delete(spark: Any, path: str, args: dict[str, Any]) -> Any:
    return _table(spark, path).delete(args["condition"])


def _update(spark: Any, path: str, args: dict[str, Any]) -> Any:
    assignments = args["set"]
    if not assignments:
        raise InvalidOptionError("procedure argument set must map columns to SQL expressions: "
                                 "set => map('price', 'price * 2')")
    return _table(spark, path).update(args["condition"], set=dict(assignments))


def _merge(spark: Any, path: str, args: dict[str, Any]) -> Any:
    return _table(spark, path).merge(
        _source(spark, args["source"]), _on(args["on"]), when_matched=args["when_matched"],
        when_not_matched=args["when_not_matched"], update_columns=_columns(args["update_columns"]),
        target_predicate=args["target_predicate"])


def _delete_insert(spark: Any, path: str, args: dict[str, Any]) -> Any:
    return _table(spark, path).delete_insert(
        _source(spark, args["source"]), _on(args["on"]), target_predicate=args["target_predicate"])


def _replace_where(spark: Any, path: str, args: dict[str, Any]) -> Any:
    return _table(spark, path).replace_where(_source(spark, args["source"]), args["condition"])


def _write(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.table_write import WriteRequest, write_rows

    request = WriteRequest.from_json(str(args["options"]))
    return write_rows(spark, _source(spark, args["source"]), path, request)


def _describe_location(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.folders import describe_folder

    return describe_folder(path)


def _statistics(spark: Any, path: str, args: dict[str, Any]) -> Any:
    return _table(spark, path).statistics()


def _schema(spark: Any, path: str, args: dict[str, Any]) -> Any:
    from qbeast.operations.statistics import table_schema

    return table_schema(path)


def _explain_read(spark: Any, path: str, args: dict[str, Any]) -> Any:
    fraction = args["fraction"]
    return _table(spark, path).explain_read(filter=args["filter"],
                                            fraction=None if fraction is None else float(fraction))


@dataclass(frozen=True)
class ColumnsAdded(OperationResult):
    """What ``add_columns`` committed: the table, its new version and the columns added."""

    table: str
    version: int
    columns: tuple[str, ...]

    def summary_lines(self) -> list[str]:
        return [f"add columns to {self.table}: version {self.version}",
                f"  columns: {', '.join(self.columns)} (null in every existing row)"]


def _add_columns(spark: Any, table: str, args: dict[str, Any]) -> Any:
    """New nullable columns at the end of the schema: a commit of the schema alone (an empty
    append that adds them), then the catalog entry's schema when ``table`` is a catalog name."""
    from pyspark.sql import functions as F

    import qbeast

    text = args["columns"]
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError("procedure argument columns must name the new columns and their "
                                 "types: columns => 'full_name string, score double'")
    try:
        new = spark.createDataFrame([], text.strip()).schema
    except Exception as exc:  # noqa: BLE001 - Spark's parser errors have several classes
        raise InvalidOptionError(f"procedure argument columns={text!r} is not a list of columns "
                                 f"and types ('name type, ...'): {str(exc).splitlines()[0]}") from exc
    path = table_location(spark, table)
    current = _table(spark, path).to_df()
    existing = {name.lower() for name in current.columns}
    clashes = [f.name for f in new.fields if f.name.lower() in existing]
    if clashes:
        raise InvalidOptionError(f"{table} already has column(s) {', '.join(clashes)}; its columns: "
                                 f"{', '.join(current.columns)}")
    empty = current.limit(0).select(
        "*", *(F.lit(None).cast(f.dataType).alias(f.name, metadata=f.metadata) for f in new.fields))
    written = qbeast.write(empty, path, mode="append", merge_schema=True)
    if not _is_location(table):
        from qbeast.spark.catalog import add_catalog_columns

        add_catalog_columns(spark, table, new)
    return ColumnsAdded(table, written.version, tuple(f"{f.name} {f.dataType.simpleString()}"
                                                      for f in new.fields))


def _sample_predicate(spark: Any, path: str, args: dict[str, Any]) -> Any:
    table, key = _table(spark, path), args.get("key")
    predicate = table.sample_predicate(float(args["fraction"]), key=key)
    prunes = True if key is None else table.sample_key_prunes(key)
    return {"columns": [{"name": "predicate", "type": "string"}, {"name": "prunes", "type": "boolean"}],
            "rows": [[predicate, prunes]]}


@dataclass(frozen=True)
class Rows(OperationResult):
    """A small DataFrame's answer as values: ``columns`` (name, Spark type) and ``rows``."""

    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]

    @classmethod
    def of(cls, df: Any) -> Rows:
        return cls(tuple((f.name, f.dataType.simpleString()) for f in df.schema.fields),
                   tuple(tuple(row) for row in df.collect()))

    def summary_lines(self) -> list[str]:
        return [", ".join(name for name, _ in self.columns),
                *(", ".join(str(v) for v in row) for row in self.rows)]


def _approx(spark: Any, path: str, args: dict[str, Any]) -> Any:
    df = _table(spark, path).approx(
        json.loads(args["aggregates"]), group_by=None if args["group_by"] is None else json.loads(args["group_by"]),
        filter=args["filter"], tolerance=float(args["tolerance"]), confidence=float(args["confidence"]),
        max_fraction=float(args["max_fraction"]))
    return Rows.of(df)


def _register_table(spark: Any, name: str, args: dict[str, Any]) -> Any:
    from qbeast.core.sql import check_table_name
    from qbeast.spark.catalog import ensure_catalog_table

    check_table_name(str(name))
    done = ensure_catalog_table(spark, name, str(args["location"]), refresh=bool(args["refresh"]),
                                column_comments=args["column_comments"], properties=args["properties"],
                                comment=args["comment"])
    line = f"{name}: {'registered' if done else 'unchanged'} at {args['location']}"
    return {"columns": [{"name": "line", "type": "string"}], "rows": [[line]]}


TABLE = Parameter("table", "string")
SOURCE = Parameter("source", "string")
PROCEDURES: tuple[Procedure, ...] = (
    Procedure("optimize", "lay out the files of a revision so that every cube has one block",
              (TABLE, Parameter("revision_id", "long", "NULL"), Parameter("fraction", "double", "1.0"),
               Parameter("max_rewrite_ratio", "double", "NULL"),
               Parameter("merge_revisions", "boolean", "false"), Parameter("files", "string", "NULL")),
              _optimize),
    Procedure("vacuum", "delete data files no version inside the retention window uses",
              (TABLE, Parameter("retention_hours", "double", "168.0"), Parameter("dry_run", "boolean", "false"),
               Parameter("allow_short_retention", "boolean", "false")), _vacuum),
    Procedure("history", "the table's commits, newest first",
              (TABLE, Parameter("limit", "long", "NULL")), _history),
    Procedure("index_metrics", "cube, block, file and element statistics of a revision",
              (TABLE, Parameter("revision_id", "long", "NULL")), _index_metrics),
    Procedure("convert_to_qbeast", "turn a parquet folder or Delta table into a Qbeast table",
              (TABLE, Parameter("columns_to_index", "string"), Parameter("cube_size", "long", "NULL"),
               Parameter("source_format", "string", "NULL")), _convert),
    Procedure("upgrade_format", "upgrade the Qbeast metadata of an older table in place",
              (TABLE, Parameter("dry_run", "boolean", "false")), _upgrade),
    Procedure("delete", "delete the rows where a condition holds (all rows without one)",
              (TABLE, Parameter("condition", "string", "NULL")), _delete),
    Procedure("update", "set columns (a map from column to SQL expression) where a condition holds",
              (TABLE, Parameter("set", "map"), Parameter("condition", "string", "NULL")), _update),
    Procedure("merge", "upsert the rows of a query or table by key columns or a condition",
              (TABLE, SOURCE, Parameter("on", "string"), Parameter("when_matched", "string", "'update'"),
               Parameter("when_not_matched", "string", "'insert'"), Parameter("update_columns", "string", "NULL"),
               Parameter("target_predicate", "string", "NULL")), _merge),
    Procedure("delete_insert", "replace the rows of the source's keys by the source's rows",
              (TABLE, SOURCE, Parameter("on", "string"), Parameter("target_predicate", "string", "NULL")),
              _delete_insert),
    Procedure("replace_where", "replace the rows where a condition holds by the source's rows",
              (TABLE, SOURCE, Parameter("condition", "string")), _replace_where),
    Procedure("write", "write the rows of a query in a write mode; options: a JSON object "
              "(mode, columns_to_index, cube_size, on, condition, ...)",
              (TABLE, SOURCE, Parameter("options", "string")), _write),
    Procedure("add_columns", "add nullable columns at the end of the schema ('name type, ...'; "
              "null in every existing row)", (TABLE, Parameter("columns", "string")), _add_columns,
              resolves_table=False),
    Procedure("describe_location", "what a table location holds: nothing, a table, other files",
              (TABLE,), _describe_location),
    Procedure("statistics", "rows, bytes, files, revisions and index settings of the latest version",
              (TABLE,), _statistics),
    Procedure("schema", "the latest version's schema (Delta JSON) and indexed columns",
              (TABLE,), _schema),
    Procedure("explain_read", "the files a read with a filter and a sample fraction opens, and why",
              (TABLE, Parameter("filter", "string", "NULL"), Parameter("fraction", "double", "NULL")),
              _explain_read),
    Procedure("sample_predicate", "the SQL row filter of the sample of a fraction (on one key "
              "column's hash with key), and whether the index prunes by it",
              (TABLE, Parameter("fraction", "double"), Parameter("key", "string", "NULL")),
              _sample_predicate),
    Procedure("approx", "aggregates within a tolerance, read band by band (aggregates and group_by: "
              "JSON lists)",
              (TABLE, Parameter("aggregates", "string"), Parameter("group_by", "string", "NULL"),
               Parameter("filter", "string", "NULL"), Parameter("tolerance", "double", "0.01"),
               Parameter("confidence", "double", "0.95"), Parameter("max_fraction", "double", "1.0")),
              _approx),
    Procedure("register_table", "create (or with refresh => true re-create) catalog table `table` "
              "over the Qbeast table at location",
              (TABLE, Parameter("location", "string"), Parameter("refresh", "boolean", "false"),
               Parameter("column_comments", "map", "NULL"), Parameter("properties", "map", "NULL"),
               Parameter("comment", "string", "NULL")), _register_table, resolves_table=False),
)
OUTPUT = Parameter("output", "string", "'lines'")


def _is_location(table: str) -> bool:
    """Whether ``table`` names a location (a path or URI) rather than a catalog table."""
    return "/" in table or ":" in table


def table_location(spark: Any, table: str) -> str:
    """The location of ``table``: a path or URI as given, else the catalog table's LOCATION."""
    from qbeast.spark.catalog import describe_location

    if not isinstance(table, str) or not table.strip():
        raise InvalidOptionError("procedure argument table must be a catalog table name or a table location")
    table = table.strip()
    if _is_location(table):
        return table
    if not spark.catalog.tableExists(table):
        raise InvalidOptionError(f"table {table!r} is not in the catalog (give a catalog table, "
                                 "schema-qualified if needed, or a table location)")
    location = describe_location(spark, table)
    if not location:
        raise InvalidOptionError(f"catalog table {table!r} has no location")
    return location


def run(name: str, arguments: Mapping[str, Any], spark: Any) -> dict[str, Any]:
    """Run procedure ``name`` with ``arguments`` (by parameter name) in ``spark``."""
    procedure = next((p for p in PROCEDURES if p.name == name.lower()), None)
    if procedure is None:
        raise InvalidOptionError(f"no procedure {name!r}; procedures: {[p.name for p in PROCEDURES]}")
    args = dict(arguments)
    output = args.pop(OUTPUT.name, "lines") or "lines"
    if output not in OUTPUTS:
        raise InvalidOptionError(f"procedure argument output={output!r}; allowed values: {', '.join(OUTPUTS)}")
    table = args.pop("table")
    target = table_location(spark, table) if procedure.resolves_table else str(table)
    result = procedure.run(spark, target, args)
    if isinstance(result, dict):  # already a table of rows (history, sample_predicate, ...)
        return result
    return _json(result) if output == "json" else _lines(result)


def catalog() -> dict[str, Any]:
    """The declaration the JVM catalog builds its procedures from."""
    return {"procedures": [
        {"name": p.name, "description": p.description,
         "parameters": [{"name": q.name, "type": q.type, "default": q.default}
                        for q in (*p.parameters, OUTPUT)]}
        for p in PROCEDURES]}


class SqlProcedures:
    """``io.dbtqbeast.bridge.Procedures`` implemented in Python (a Py4J callback object)."""

    class Java:
        implements = ["io.dbtqbeast.bridge.Procedures"]

    def catalog(self) -> str:
        from qbeast.spark.sql.python_planner import bridge_answer

        return bridge_answer("procedures", catalog)

    def call(self, name: str, arguments_json: str, jsession: Any) -> str:
        from qbeast.spark.bridge import python_session
        from qbeast.spark.sql.python_planner import bridge_answer

        return bridge_answer(f"CALL {name}",
                             lambda: run(str(name), json.loads(arguments_json), python_session(jsession)))


_lock = threading.Lock()
_procedures: SqlProcedures | None = None


def enable_sql_procedures(spark: Any) -> None:
    """Offer the table operations to SQL in ``spark``'s driver: ``CALL qbeast_system.<name>(...)``
    (``qbeast serve`` does it for every client). On a Spark Connect session of a server with the
    engine in its driver (``qbeast serve``) there is nothing to do: the server offers them."""
    from qbeast.spark.bridge import install_procedures
    from qbeast.spark.shipping import is_connect_session
    from qbeast.spark.sql.sources import JVM, register

    global _procedures
    if register(spark) != JVM:
        raise InvalidOptionError("SQL procedures need the JVM bridge in this session "
                                 "(spark.qbeast.sqlBridge is false, or the jar is missing)")
    if is_connect_session(spark):  # the server's driver runs SQL: qbeast serve offers them there
        return
    with _lock:
        if _procedures is None:
            _procedures = SqlProcedures()
        install_procedures(spark, _procedures)


__all__ = ["PROCEDURES", "SqlProcedures", "catalog", "enable_sql_procedures", "run", "table_location"]
