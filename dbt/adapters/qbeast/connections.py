"""Connections of the qbeast adapter: one in-process Spark session shared by every dbt thread.

dbt-spark's session method rebuilds ``SparkSession.builder`` for every statement (in dbt's worker
threads ``getActiveSession()`` is None). Here the connection handle keeps the session object it
built through the engine's ``get_or_create_session`` (so the engine's settings always apply) and
only rebuilds it if it has been stopped.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt.adapters.spark.session import Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtDatabaseError

from qbeast import EmbeddedCatalog, is_connect_session

from dbt.adapters.qbeast import engine_log, interrupts
from dbt.adapters.qbeast.credentials import THRIFT_METHOD
from dbt.adapters.qbeast.engine_errors import statement_error
from dbt.adapters.qbeast.errors import QbeastCatalogBusyError
from dbt.adapters.qbeast.statements import split_statements
from dbt.adapters.qbeast.session_settings import (
    catalog_path,
    connection_spark_conf,
    console_log_level,
    project_root_of,
    spark_log_file,
    uses_embedded_metastore,
)

log = logging.getLogger("qbeast.dbt.connections")

APP_NAME = "dbt-qbeast"


def _is_stopped(session: Any) -> bool:
    """True once ``session.stop()`` ran.

    Spark Connect sessions have no SparkContext and say it themselves (``is_stopped``); classic
    sessions clear the context's Java handle when stopped.
    """
    if is_connect_session(session):
        return bool(getattr(session, "is_stopped", False))
    context = getattr(session, "_sc", None)
    return context is None or getattr(context, "_jsc", None) is None


class QbeastSession:
    """Connection handle: the process's Spark session, started on first use.

    dbt opens a connection per node; asking Spark for the session with the full configuration each
    time would make Spark warn that static settings of a running session are ignored. Sessions
    are therefore remembered per configuration for the whole process and rebuilt only when stopped.
    """

    _lock = threading.Lock()
    _started: Dict[Tuple[Tuple[str, str], ...], Any] = {}

    def __init__(self, conf: Dict[str, str]) -> None:
        self.conf = conf

    @property
    def session(self) -> Any:
        key = tuple(sorted(self.conf.items()))
        with self._lock:
            session = self._started.get(key)
            if session is None or _is_stopped(session):
                session = self._start()
                self._started.clear()
                self._started[key] = session
            return session

    @classmethod
    def running(cls) -> Any:
        """The session this process started for dbt, if any (without starting one)."""
        with cls._lock:
            for session in cls._started.values():
                if not _is_stopped(session):
                    return session
        return None

    def _start(self) -> Any:
        import qbeast

        started = time.monotonic()
        session = qbeast.get_or_create_session(self.conf, app_name=APP_NAME, hive=True)
        # Catalog tables `USING qbeast` (the qbeast models) are only readable once the Python
        # data source is registered, and registrations are per session.
        if qbeast.register(session) == "jvm":
            # SQL's DELETE / UPDATE on qbeast tables (a hook's, an operation's, a test's) run
            # as the engine's procedures, which the driver has to offer.
            qbeast.enable_sql_procedures(session)
        log.info(
            "spark session ready for dbt (warehouse %s, %.1fs)",
            session.conf.get("spark.sql.warehouse.dir", "?"),
            time.monotonic() - started,
        )
        return session

    def cursor(self) -> "QbeastCursor":
        return QbeastCursor(self)


class QbeastCursor(Cursor):
    """dbt-spark's DB-API-like cursor, running SQL on the handle's session."""

    def __init__(self, handle: QbeastSession) -> None:
        super().__init__()
        self._handle = handle

    def execute(self, sql: str, *parameters: Any) -> None:
        from pyspark.errors import AnalysisException, ParseException

        interrupts.check()
        if parameters:
            sql = sql % parameters
        session = self._handle.session
        try:
            try:
                self._df = session.sql(sql)
            except ParseException:
                # several statements in one text (a model's sql_header before its create, a
                # hook's script): run them in order, the last one's result is the cursor's
                statements = split_statements(sql)
                if len(statements) < 2:
                    raise
                for statement in statements[:-1]:
                    interrupts.check()
                    session.sql(statement)
                self._df = session.sql(statements[-1])
        except AnalysisException as exc:
            raise DbtDatabaseError(statement_error(exc)) from exc


class QbeastConnectionWrapper(SessionConnectionWrapper):
    """dbt-spark's session connection wrapper, with SQL nulls for ``None`` bindings.

    dbt-spark renders every binding it does not know as a quoted string, so an empty cell of a
    seed became the four-letter string ``'None'`` instead of null.
    """

    @classmethod
    def _fix_binding(cls, value: Any) -> Any:
        if value is None:
            return "null"
        return super()._fix_binding(value)


def _driver_running() -> bool:
    """True once this process has a (classic) Spark driver: its JVM then holds the catalog."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def _dbt_debug() -> bool:
    try:
        from dbt.flags import get_flags
    except ImportError:  # dbt-core absent: the adapter is used as a library
        return False
    return bool(getattr(get_flags(), "DEBUG", False))


class QbeastConnectionManager(SparkConnectionManager):
    """Spark's connection manager with the in-process session as the only connection method.

    Interrupts (Ctrl-C, SIGTERM, dbt's own cancel) go through :mod:`interrupts`: running Spark
    jobs are cancelled, a qbeast write abandons its commit, later statements fail as cancelled.
    """

    TYPE = "qbeast"

    def __init__(self, profile: Any, mp_context: Any) -> None:
        super().__init__(profile, mp_context)
        credentials = profile.credentials
        project_root = project_root_of(profile)
        self.project_root: Path = project_root
        # Resolve catalog_dir once, against the project folder: open() only sees the connection.
        self.credentials = replace(
            credentials, catalog_dir=str(catalog_path(credentials.catalog_dir, project_root))
        )
        interrupts.reset(QbeastSession.running)
        interrupts.install()

    def set_connection_name(self, name: Optional[str] = None) -> Connection:
        connection = super().set_connection_name(name)
        connection.credentials = self.credentials
        return connection

    def cancel_requested(self) -> bool:
        """Whether dbt was interrupted (the qbeast write's ``cancelled`` callback)."""
        return interrupts.requested()

    def cancel(self, connection: Connection) -> None:
        """dbt's cancel (after an interrupt): stop the Spark jobs, fail what comes next; over
        ``method: thrift``, also cancel the connection's running statement in the server."""
        interrupts.request()
        if connection.credentials.method == THRIFT_METHOD and connection.handle is not None:
            connection.handle.cancel()

    def cleanup_all(self) -> None:
        super().cleanup_all()
        interrupts.uninstall()

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """A statement that fails is a ``DbtDatabaseError`` ("Database Error", what dbt's own
        adapters raise and its hook tests expect; dbt-spark raises ``DbtRuntimeError``), worded
        as the statement's error without a server's Java stack or Spark's query plan. A cancel
        stays a cancel."""
        try:
            yield
        except (interrupts.Cancelled, QbeastCatalogBusyError, FailedToConnectError):
            raise  # a cancel, or the connection this statement opened failed: already dbt's words
        except Exception as exc:
            log.debug("Error while running:\n%s", sql)
            log.debug("%s", exc)
            if not exc.args:
                raise
            raise DbtDatabaseError(statement_error(exc)) from exc

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        credentials = connection.credentials
        if credentials.method == THRIFT_METHOD:
            # a SQL connection to `qbeast serve` (PyHive, as dbt-spark opens it); the engine
            # runs in the server's driver (engines.SqlEngine)
            return super().open(connection)
        catalog = catalog_path(credentials.catalog_dir, Path.cwd())
        conf = connection_spark_conf(
            credentials.server_side_parameters, catalog,
            console_log_level(_dbt_debug(), os.environ),
        )
        if any(str(catalog) in value for value in conf.values()):
            try:
                catalog.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file where the folder (or one of its parents) should be
                raise FailedToConnectError(
                    f"catalog_dir {catalog} of the qbeast profile cannot be created "
                    f"({exc.strerror}); allowed values: a folder path (it holds the embedded "
                    "catalog and the warehouse)"
                ) from None
        engine_log.route_engine_log()
        engine_log.route_pyspark_error_log(spark_log_file(catalog))
        if uses_embedded_metastore(credentials.server_side_parameters) and not _driver_running():
            embedded = EmbeddedCatalog(catalog)
            holder = embedded.hold()
            if holder is not None:
                raise QbeastCatalogBusyError(embedded.busy_message(holder))
        handle = QbeastSession(conf)
        try:
            _ = handle.session  # start now: a broken setting should fail the connection, not a model
        except Exception as exc:
            raise FailedToConnectError(
                f"could not start the Spark session of the qbeast adapter "
                f"(catalog_dir {catalog}): {type(exc).__name__}: {exc}"
            ) from exc
        interrupts.install()  # PySpark takes SIGINT when it starts a driver in the main thread
        connection.handle = QbeastConnectionWrapper(handle)  # type: ignore[arg-type]
        connection.state = ConnectionState.OPEN
        return connection
