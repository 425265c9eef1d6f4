"""Where the adapter's engine calls run: on a Spark session of the dbt process, or behind SQL.

``method: session`` and ``method: connect`` have a Spark session in the dbt process, and the
engine runs there (:class:`SessionEngine`). ``method: thrift`` has only a SQL connection to
``qbeast serve``: every engine call is a statement the server's driver runs with the same engine
(:class:`SqlEngine`): the writes are ``CALL qbeast_system.write(...)`` with the write's
:class:`qbeast.WriteRequest` as JSON, the table operations are the other ``qbeast_system``
procedures (answers as JSON, ``output => 'json'``). The adapter asks :func:`engine_of` for the
engine of its connection and calls the same methods either way; this is the one place that
knows the difference. What needs the dbt process's own Spark session or files (Python models,
moving a table's folder when a model switches materialization) is refused behind SQL with an
error that names the method and what to use instead.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from dbt_common.exceptions import DbtRuntimeError

from qbeast import quote_identifier, sql_string

from dbt.adapters.qbeast.credentials import THRIFT_METHOD as THRIFT
from dbt.adapters.qbeast.engine_errors import engine_line
from dbt.adapters.qbeast.errors import QbeastProfileError


@dataclass(frozen=True)
class ModelRows:
    """The rows a write takes: a DataFrame of the dbt process (``frame``) or a query the server
    runs (``query``), and their column names."""

    columns: Tuple[str, ...]
    frame: Any = None
    query: Optional[str] = None

    def projected(self, columns: Sequence[Tuple[str, str]]) -> "ModelRows":
        """Only ``columns`` ((name, alias) pairs), renamed to their aliases."""
        names = tuple(alias for _, alias in columns)
        if self.frame is not None:
            from pyspark.sql import functions as F

            return ModelRows(names, frame=self.frame.select(
                *[F.col(quote_identifier(n)).alias(a) for n, a in columns]))
        select = ", ".join(f"{quote_identifier(n)} as {quote_identifier(a)}" for n, a in columns)
        return ModelRows(names, query=f"select {select} from (\n{self.query}\n) as model_rows")


#: An approximate answer: its columns ((name, Spark type) pairs) and rows.
Answer = Tuple[List[Tuple[str, str]], List[Tuple[Any, ...]]]


class Engine(Protocol):
    """What the adapter asks of the engine (both implementations below)."""

    behind_sql: bool

    def sql(self, statement: str) -> List[Dict[str, Any]]: ...

    def model_rows(self, code: str, frame: Any = None) -> ModelRows: ...

    def table_rows(self, name: str) -> ModelRows: ...

    def describe_folder(self, path: str) -> Any: ...

    def table_schema(self, location: str) -> Any: ...

    def statistics(self, location: str) -> Dict[str, Any]: ...

    def write(self, rows: ModelRows, folder: str, request: Any,
              cancelled: Optional[Callable[[], bool]] = None) -> Any: ...

    def register(self, name: str, location: str, refresh: bool, column_comments: Any,
                 properties: Any, comment: Optional[str]) -> None: ...

    def schema_folder(self, schema: Optional[str]) -> str: ...

    def column_comments(self, name: str) -> Dict[str, str]: ...

    def table_comment(self, name: str) -> Optional[str]: ...

    def operation(self, name: str, location: str, **arguments: Any) -> Tuple[Dict[str, Any], str]: ...

    def sample_predicate(self, location: str, fraction: float) -> str: ...

    def sample_filter(self, location: str, fraction: float, key: Optional[str]) -> Tuple[str, bool]:
        """``QbeastTable.sample_predicate(fraction, key=key)`` and whether it prunes files."""

    def approx(self, location: str, aggregates: List[str], **options: Any) -> Answer: ...


def not_over_sql(what: str, instead: str) -> QbeastProfileError:
    """The error of what ``method: thrift`` cannot do (docs/dbt.md, "method: thrift")."""
    return QbeastProfileError(
        f"{what} is not possible with `method: {THRIFT}` (the engine runs in the server and the "
        f"dbt process has no Spark session); {instead}")


class SessionEngine:
    """The engine in the dbt process, on its Spark session (``session`` and ``connect``)."""

    behind_sql = False

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def sql(self, statement: str) -> List[Dict[str, Any]]:
        return [row.asDict() for row in self.spark.sql(statement).collect()]

    def model_rows(self, code: str, frame: Any = None) -> ModelRows:
        df = self.spark.sql(code) if frame is None else frame
        return ModelRows(tuple(df.columns), frame=df)

    def table_rows(self, name: str) -> ModelRows:
        df = self.spark.table(name)
        return ModelRows(tuple(df.columns), frame=df)

    def describe_folder(self, path: str) -> Any:
        import qbeast

        return qbeast.describe_folder(path)

    def table_schema(self, location: str) -> Any:
        import qbeast

        return qbeast.table_schema(location)

    def statistics(self, location: str) -> Dict[str, Any]:
        import qbeast

        return qbeast.QbeastTable.for_path(self.spark, location).statistics().to_dict()

    def write(self, rows: ModelRows, folder: str, request: Any,
              cancelled: Optional[Callable[[], bool]] = None) -> Any:
        import qbeast

        return qbeast.write_rows(self.spark, rows.frame, folder, request, cancelled=cancelled)

    def register(self, name: str, location: str, refresh: bool, column_comments: Any,
                 properties: Any, comment: Optional[str]) -> None:
        import qbeast

        qbeast.ensure_catalog_table(self.spark, name, location, refresh=refresh,
                                    column_comments=column_comments, properties=properties,
                                    comment=comment)

    def schema_folder(self, schema: Optional[str]) -> str:
        import qbeast

        return qbeast.local_path(self.spark.catalog.getDatabase(schema).locationUri)

    def column_comments(self, name: str) -> Dict[str, str]:
        columns = self.spark.catalog.listColumns(name)
        return {c.name.lower(): c.description for c in columns if c.description}

    def table_comment(self, name: str) -> Optional[str]:
        return self.spark.catalog.getTable(name).description or None

    def operation(self, name: str, location: str, **arguments: Any) -> Tuple[Dict[str, Any], str]:
        """A table operation of :class:`qbeast.QbeastTable` (or the module functions): its
        result as a plain dict, and its summary text."""
        import qbeast

        table = qbeast.QbeastTable.for_path(self.spark, location)
        calls: Dict[str, Callable[[], Any]] = {
            "optimize": lambda: table.optimize(**arguments),
            "vacuum": lambda: table.vacuum(**arguments),
            "index_metrics": lambda: table.index_metrics(**arguments),
            "explain_read": lambda: table.explain_read(**arguments),
            "upgrade_format": lambda: qbeast.upgrade_format(location, **arguments),
            "convert_to_qbeast": lambda: qbeast.convert_to_qbeast(self.spark, location, **arguments),
        }
        result = calls[name]()
        return result.to_dict(), str(result)

    def sample_predicate(self, location: str, fraction: float) -> str:
        import qbeast

        return qbeast.QbeastTable.for_path(self.spark, location).sample_predicate(fraction)

    def sample_filter(self, location: str, fraction: float, key: Optional[str]) -> Tuple[str, bool]:
        import qbeast

        table = qbeast.QbeastTable.for_path(self.spark, location)
        return (table.sample_predicate(fraction, key=key),
                True if key is None else table.sample_key_prunes(key))

    def approx(self, location: str, aggregates: List[str], **options: Any) -> Answer:
        import qbeast

        df = qbeast.QbeastTable.for_path(self.spark, location).approx(aggregates, **options)
        columns = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        return columns, [tuple(row) for row in df.collect()]


def sql_value(value: Any) -> str:
    """A procedure argument as SQL text (strings through the engine's quoting)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        pairs = ", ".join(f"{sql_string(str(k))}, {sql_string(str(v))}" for k, v in value.items())
        return f"map({pairs})"
    return sql_string(str(value))


class SqlEngine:
    """The engine in ``qbeast serve``'s driver, reached over the SQL connection (``thrift``).

    ``fetch`` runs one statement on the connection of the dbt thread and returns the column
    names and the rows.
    """

    behind_sql = True

    def __init__(self, fetch: Callable[[str], Tuple[List[str], List[Tuple[Any, ...]]]]) -> None:
        self._fetch = fetch

    def sql(self, statement: str) -> List[Dict[str, Any]]:
        names, rows = self._fetch(statement)
        return [dict(zip(names, row)) for row in rows]

    def call(self, procedure: str, table: str, **arguments: Any) -> Tuple[Dict[str, Any], str]:
        """``CALL qbeast_system.<procedure>(table => ..., output => 'json')``: its result as a
        dict, and its summary text."""
        import qbeast

        try:
            rows = self.sql(self.call_sql(procedure, table, arguments, output="json"))
        except DbtRuntimeError as exc:  # the engine's error, as the server's SQL error says it
            raise qbeast.QbeastError(
                f"{engine_line(exc)} (qbeast_system.{procedure} in the server)") from None
        return json.loads(rows[0]["result"]), str(rows[0]["summary"])

    @staticmethod
    def call_sql(procedure: str, table: str, arguments: Dict[str, Any], output: Optional[str] = None) -> str:
        given = {"table": table, **{k: v for k, v in arguments.items() if v is not None}}
        if output is not None:
            given["output"] = output
        named = ", ".join(f"{k} => {sql_value(v)}" for k, v in given.items())
        return f"CALL qbeast_system.{procedure}({named})"

    def model_rows(self, code: str, frame: Any = None) -> ModelRows:
        # the model's SQL as a subquery: its comments and CTEs stay inside, a last `--` comment
        # line cannot swallow the closing parenthesis
        query = f"select * from (\n{code.strip().rstrip(';')}\n) as model_rows"
        names, _ = self._fetch(f"{query} limit 0")
        return ModelRows(tuple(names), query=query)

    def table_rows(self, name: str) -> ModelRows:
        names, _ = self._fetch(f"select * from {name} limit 0")
        return ModelRows(tuple(names), query=f"select * from {name}")

    def describe_folder(self, path: str) -> Any:
        return _Facts(self.call("describe_location", path)[0])

    def table_schema(self, location: str) -> Any:
        return _Facts(self.call("schema", location)[0])

    def statistics(self, location: str) -> Dict[str, Any]:
        return self.call("statistics", location)[0]

    def write(self, rows: ModelRows, folder: str, request: Any,
              cancelled: Optional[Callable[[], bool]] = None) -> Any:
        assert rows.query is not None
        return _Facts(self.call("write", folder, source=rows.query, options=request.to_json())[0])

    def register(self, name: str, location: str, refresh: bool, column_comments: Any,
                 properties: Any, comment: Optional[str]) -> None:
        self.sql(self.call_sql("register_table", name, {
            "location": location, "refresh": refresh, "column_comments": dict(column_comments or {}) or None,
            "properties": dict(properties or {}) or None, "comment": comment}))

    def schema_folder(self, schema: Optional[str]) -> str:
        import qbeast

        for row in self._fetch(f"describe schema extended {schema}")[1]:
            if str(row[0]).strip().lower() == "location":
                return qbeast.local_path(str(row[1]))
        raise DbtRuntimeError(f"schema {schema}: the server's catalog gives no location for it")

    def table_comment(self, name: str) -> Optional[str]:
        for row in self._fetch(f"describe table extended {name}")[1]:
            if str(row[0]).strip() == "Comment" and len(row) > 1:
                return str(row[1]) if row[1] else None
        return None

    def column_comments(self, name: str) -> Dict[str, str]:
        comments: Dict[str, str] = {}
        for row in self._fetch(f"describe table {name}")[1]:
            if not row[0] or str(row[0]).startswith("#"):
                break  # the partitioning section follows the columns
            if len(row) > 2 and row[2]:
                comments[str(row[0]).lower()] = str(row[2])
        return comments

    def operation(self, name: str, location: str, **arguments: Any) -> Tuple[Dict[str, Any], str]:
        if name == "optimize" and arguments.get("files") is not None:
            arguments["files"] = json.dumps(list(arguments["files"]))
        if name == "convert_to_qbeast":
            arguments["columns_to_index"] = ",".join(arguments["columns_to_index"])
        return self.call(name, location, **arguments)

    def sample_predicate(self, location: str, fraction: float) -> str:
        return str(self.sql(self.call_sql("sample_predicate", location, {"fraction": fraction}))[0]["predicate"])

    def sample_filter(self, location: str, fraction: float, key: Optional[str]) -> Tuple[str, bool]:
        arguments: Dict[str, Any] = {"fraction": fraction}
        if key is not None:
            arguments["key"] = key
        row = self.sql(self.call_sql("sample_predicate", location, arguments))[0]
        return str(row["predicate"]), bool(row["prunes"])

    def approx(self, location: str, aggregates: List[str], **options: Any) -> Answer:
        group_by = options.get("group_by")
        if isinstance(group_by, str):
            group_by = [group_by]
        answer, _ = self.call("approx", location, aggregates=json.dumps(list(aggregates)),
                           group_by=None if group_by is None else json.dumps(list(group_by)),
                           filter=options.get("filter"), tolerance=options.get("tolerance"),
                           confidence=options.get("confidence"), max_fraction=options.get("max_fraction"))
        return [tuple(c) for c in answer["columns"]], [tuple(r) for r in answer["rows"]]


class _Facts:
    """A procedure's JSON answer read by attribute, as the engine's result objects are."""

    def __init__(self, values: Dict[str, Any]) -> None:
        self.__dict__.update(values)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def engine_of(adapter: Any) -> Engine:
    """The engine behind ``adapter``'s connection of this thread."""
    connection = adapter.connections.get_thread_connection()
    if str(connection.credentials.method) != THRIFT:
        return SessionEngine(connection.handle.handle.session)

    def fetch(statement: str) -> Tuple[List[str], List[Tuple[Any, ...]]]:
        _, cursor = adapter.connections.add_query(statement, auto_begin=False)
        if not cursor.description:  # a statement without a result set
            return [], []
        return [str(d[0]) for d in cursor.description], [tuple(row) for row in cursor.fetchall()]

    return SqlEngine(fetch)


__all__ = ["Answer", "Engine", "ModelRows", "SessionEngine", "SqlEngine", "engine_of", "not_over_sql", "sql_value"]
