"""The one place where the engine builds Spark sessions.

Why a helper: two settings must hold for every session that writes or reads Qbeast tables, and
forgetting any of them gives silently wrong results rather than errors:

* Spark's Python workers must run the driver's interpreter (``PYSPARK_PYTHON``), otherwise the
  Arrow UDFs of the writer run in another environment without ``qbeast`` installed.
* Dates are transformed as epoch milliseconds of their midnight; qbeast-spark uses the JVM's zone.
  Pinning both the session time zone and the JVM zone to UTC makes that midnight unambiguous.

On a cluster (a non-local master) or through Spark Connect (``spark.remote``) the Python workers
are not children of this process, so the session also gets the engine's code shipped to them (see
:mod:`qbeast.spark.shipping`); ``spark.qbeast.shipEngine`` = ``false`` turns that off for clusters
whose workers have the engine installed.

Sessions built here also read ``qbeast`` in SQL at native speed: the JVM read bridge's jar goes
on ``spark.jars`` with its optimizer rule on ``spark.sql.extensions``, and the engine's planner
is registered (:mod:`qbeast.spark.bridge`, :mod:`qbeast.spark.sql.sources`;
``spark.qbeast.sqlBridge`` = ``false`` keeps the Python data source). Building a session imports
the SQL wing's registration (inside :func:`get_or_create_session`), so it sits above the
wings; what the wings' jobs ask of a running session (confs held for one step, parallelism, the
classic/Connect differences) is in :mod:`qbeast.spark.runtime`, below them.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from qbeast.spark.shipping import (
    is_local_master,
    ship_engine,
    ship_engine_mode,
    tasks_leave_process,
)

logger = logging.getLogger("qbeast.spark.session")

ENGINE_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


#: What a session with a local master (``local``, ``local[N]``) binds and checks, unless the
#: caller says otherwise: all its executors run in the driver's JVM, so no other machine needs
#: to reach Spark's own RPC and block-manager ports (Spark's default is the machine's external
#: address), and a process of another user of this machine cannot talk to them without the
#: secret Spark generates in the JVM at each start. docs/security.md lists every port.
LOCAL_MASTER_DEFAULTS: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.authenticate": "true",
}


def pin_python_workers() -> None:
    """Make Spark's Python workers use this interpreter (unless the user chose one explicitly)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


#: Settings that hold a list (JVM options, a class path) and their separators: a caller's value
#: is added after the one already there, never instead of it. Replacing the driver's Java
#: options would drop the UTC clock the engine relies on, or a server's Derby folder and
#: authentication class.
LIST_SETTINGS: dict[str, str] = {
    "spark.driver.extraJavaOptions": " ",
    "spark.executor.extraJavaOptions": " ",
    "spark.driver.extraClassPath": ":",
    "spark.executor.extraClassPath": ":",
}


def overlay(base: Mapping[str, str], conf: Mapping[str, Any] | None) -> dict[str, str]:
    """``base`` with ``conf``'s settings: ``conf`` wins, except for :data:`LIST_SETTINGS`,
    whose values are joined (``base``'s first; a value that already starts with ``base``'s
    is taken as it is, so applying the same overlay twice changes nothing)."""
    merged = dict(base)
    for key, value in (conf or {}).items():
        key, value = str(key), str(value)
        first = merged.get(key)
        if key in LIST_SETTINGS and first and not value.startswith(first):
            value = f"{first}{LIST_SETTINGS[key]}{value}"
        merged[key] = value
    return merged


def session_conf(conf: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Engine defaults overlaid with the caller's settings (:func:`overlay`: the caller wins,
    list settings such as the JVM options are joined)."""
    return overlay(ENGINE_DEFAULTS, conf)


#: Settings a Spark Connect client may change in its session: SQL settings (except the static
#: ones below), the engine's own, and Hadoop file system settings.
CONNECT_CLIENT_PREFIXES = ("spark.sql.", "spark.qbeast.", "spark.hadoop.")
#: Settings with those prefixes that only the server's launch can set (catalog, warehouse).
CONNECT_SERVER_ONLY = (
    "spark.sql.warehouse.dir",
    "spark.sql.catalogImplementation",
    "spark.sql.extensions",
    "spark.sql.hive.",
    "spark.hadoop.javax.jdo.",
    "spark.hadoop.hive.metastore.",
)


_reported_server_settings: set[str] = set()


def connect_session_conf(merged: Mapping[str, str]) -> dict[str, str]:
    """The part of ``merged`` a Spark Connect client can apply (plus ``spark.remote``).

    Everything else (driver/executor memory, JVM options, UI, catalog and warehouse) belongs to
    the server's launch: Spark would refuse each of them with a warning, so they are dropped here
    and logged once. docs/cluster.md lists what the server must be started with.
    """
    kept = {"spark.remote": merged["spark.remote"]}
    dropped = []
    for key, value in merged.items():
        if key == "spark.remote":
            continue
        if key.startswith(CONNECT_CLIENT_PREFIXES) and not key.startswith(CONNECT_SERVER_ONLY):
            kept[key] = value
        else:
            dropped.append(key)
    note = ", ".join(sorted(dropped))
    if note and note not in _reported_server_settings:  # dbt asks for a session per statement
        _reported_server_settings.add(note)
        logger.info("Spark Connect: settings left to the server's launch: %s", note)
    return kept


def get_or_create_session(
    conf: Mapping[str, Any] | None = None,
    *,
    master: str | None = None,
    app_name: str = "qbeast",
    hive: bool = False,
):
    """Return the active Spark session, creating it with the engine's settings if needed.

    ``master`` defaults to ``spark.master`` from ``conf`` and then to ``local[*]``; a
    ``spark.remote`` entry (``sc://host:port``) builds a Spark Connect session instead. With
    ``hive`` the session uses a Hive metastore (the dbt adapter keeps it inside the dbt project
    folder; behind Spark Connect the server's catalog applies). When tasks run outside this
    process the engine's code is shipped to them (``spark.qbeast.shipEngine``: auto, true, false).
    """
    pin_python_workers()
    from pyspark.sql import SparkSession

    from qbeast.spark.bridge import session_conf as with_bridge
    from qbeast.spark.sql.sources import register

    merged = with_bridge(session_conf(conf))
    mode = ship_engine_mode(merged)
    remote = merged.get("spark.remote")
    builder = SparkSession.builder
    if remote is None:  # a Connect server names its own application
        master = master or merged.pop("spark.master", "local[*]")
        if is_local_master(master):
            merged = {**LOCAL_MASTER_DEFAULTS, **merged}
        builder = builder.appName(app_name).master(master)
        if hive:
            builder = builder.enableHiveSupport()
    else:
        merged = connect_session_conf(merged)
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if mode == "true" or (mode == "auto" and tasks_leave_process(_master_of(session), remote)):
        ship_engine(session)
    register(session)  # `qbeast` in SQL: the JVM read bridge, or the Python data source
    if any(str(key).startswith("spark.hadoop.fs.s3a.") for key in merged):
        from qbeast.spark.file_access import apply_session_settings  # loads the storage layer

        apply_session_settings(session)  # S3 tables of this process use the session's settings
    return session


def _master_of(session: Any) -> str | None:
    """The master the session actually runs on (``getOrCreate`` may return an older session)."""
    context = getattr(session, "_sc", None)  # absent on Spark Connect sessions
    return None if context is None else context.master
