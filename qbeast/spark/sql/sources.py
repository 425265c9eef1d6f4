"""Which implementation serves ``format("qbeast")`` and ``USING qbeast`` in a session.

:func:`register` decides, once per session:

* **the JVM read bridge** (:mod:`qbeast.spark.bridge`) when the session is a classic one (a JVM in
  this process) and the jar is loaded or loadable: the engine's sessions get it on ``spark.jars``
  and ``spark.sql.extensions`` when they are built, and a running session gets it here; the
  bridge then asks :class:`qbeast.spark.sql.python_planner.PythonPlanner` which files to read;
* **the server's bridge** for a Spark Connect session whose server is ``qbeast serve`` (the
  planner runs in the server's driver; Spark refuses the Python source's name there);
* **the Python data source** (:mod:`qbeast.spark.read.datasource`) otherwise: Spark Connect
  sessions of other servers (the planner would have to run in the server's driver), no jar in the installation
  (built without a JDK), ``spark.qbeast.sqlBridge=false``, or a JVM that cannot load it. One log
  line says why.

Both cannot hold the name ``qbeast`` in one session (Spark refuses a Python source named like a
JVM one with ``DATA_SOURCE_ALREADY_EXISTS``), so a session where the jar is loaded always uses the
bridge; the Python source stays available there as ``qbeast_python`` through
:func:`qbeast.spark.read.datasource.register_python_source` (for comparisons), and :func:`register`
registers it under that name on sessions with a cluster master, where it is the SQL path to tables
on object stores (its tasks open their files through the storage layer; the bridge needs local
copies the executors cannot see, :mod:`qbeast.spark.file_access`).

The choice sits in the SQL wing because it needs both readers (and hands the bridge the planner
and the writer); the bridge module below it knows only the JVM side. Which path a session took
is logged under ``qbeast.spark.bridge``, as docs/reading.md says.
"""
from __future__ import annotations

import logging
from typing import Any

from qbeast.spark.bridge import (
    PROTOCOL,
    SQL_BRIDGE_KEY,
    BridgeError,
    bridge_class,
    install_planner,
    load_into_session,
)
from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME, register_python_source
from qbeast.spark.sql.python_planner import python_planner
from qbeast.spark.shipping import is_connect_session, tasks_leave_process
from qbeast.spark.sql.sql_writer import python_writer

logger = logging.getLogger("qbeast.spark.bridge")

#: What :func:`register` returns: the path a session's ``qbeast`` reads take.
JVM = "jvm"
PYTHON = "python"

_reported: set[str] = set()


def _report(path: str, reason: str, level: int = logging.INFO) -> None:
    """One log line per reason and process (dbt asks for a session per statement)."""
    if reason not in _reported:
        _reported.add(reason)
        logger.log(level, "qbeast SQL source: %s (%s)", path, reason)


def register(spark: Any) -> str:
    """Make ``format("qbeast")`` and ``USING qbeast`` readable in ``spark``; returns the path taken.

    ``"jvm"``: the bridge (native parquet scans planned by the engine); ``"python"``: the Python
    data source. Idempotent and cheap: call it once per session. Other sessions of the same
    driver (``newSession()``, the sessions a Thrift or Spark Connect server opens for its
    clients) get the bridge's rule on their first qbeast relation, once this process has
    registered its planner (``QbeastSource`` in ``jvm/``).
    """
    if is_connect_session(spark):
        try:
            register_python_source(spark)
        except Exception as exc:  # noqa: BLE001 - Connect raises its own exception classes
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
                raise
            # the server's JVM has the bridge: a `qbeast serve` driver plans the scans itself
            _report(JVM, "Spark Connect server with the engine in its driver (qbeast serve): "
                    "native parquet scans planned there")
            return JVM
        _report(PYTHON, "Spark Connect session: the bridge's planner must run in the driver's Python "
                "process, which is the server's here")
        return PYTHON
    bridge = bridge_class(spark)
    if bridge is None:
        reason = load_into_session(spark)
        bridge = bridge_class(spark) if reason is None else None
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
    install_planner(spark, bridge, python_planner(), python_writer())
    _report(JVM, "native parquet scans planned by the engine through the JVM read bridge")
    if tasks_leave_process(spark.sparkContext.master, None):
        # object-store tables on a cluster master: the bridge needs local copies the executors
        # cannot see, the Python source reads them in its tasks (qbeast.spark.file_access)
        register_python_source(spark, PYTHON_SOURCE_NAME)
    return JVM


__all__ = ["JVM", "PYTHON", "register"]
