"""Where the engine's and PySpark's Python log records go in a dbt process.

dbt's console is for dbt's lines. Two kinds of Python records used to reach it:

* PySpark logs every SQL error it captures through two loggers of its own
  (``SQLQueryContextLogger``, ``DataFrameQueryContextLogger``) with a handler to stderr that
  writes one JSON record per error, Java stack trace included (7 KB for a mistyped column).
  They are sent to the Spark log file beside the catalog instead, with the driver's log;
  the failing model's message is what dbt prints.
* The engine's progress (``qbeast.*`` loggers: phases, rows, files, elapsed) goes to dbt's own
  log at debug level: in ``logs/dbt.log``, and on the console with ``dbt --debug``. The engine's
  progress bars (drawn on a terminal's stderr) stay off (``QBEAST_PROGRESS=log``) unless the
  user's environment asks for them: dbt's console lines and its threads' models would tear them.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Optional

from dbt.adapters.events.logging import AdapterLogger

#: PySpark's loggers of captured query errors (pyspark.errors.exceptions.base).
PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
ENGINE_LOGGER = "qbeast"

_guard = threading.Lock()
_dbt_logger = AdapterLogger("Qbeast")


class _ToDbtDebug(logging.Handler):
    """Hands engine records to dbt's logger at debug level."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _dbt_logger.debug(f"{record.name}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - logging must never fail a model
            self.handleError(record)


def route_engine_log() -> None:
    """Send ``qbeast.*`` records at INFO and above to dbt's debug log, and only there
    (idempotent). They do not propagate: a dbt process has a root handler printing to stderr
    (dbt's tracking library calls ``logging.basicConfig`` when it is imported)."""
    os.environ.setdefault("QBEAST_PROGRESS", "log")
    engine = logging.getLogger(ENGINE_LOGGER)
    with _guard:
        if not any(isinstance(h, _ToDbtDebug) for h in engine.handlers):
            engine.addHandler(_ToDbtDebug(logging.INFO))
        if engine.level == logging.NOTSET or engine.level > logging.INFO:
            engine.setLevel(logging.INFO)
        engine.propagate = False


def route_pyspark_error_log(log_file: Path) -> None:
    """Send PySpark's captured-error records to ``log_file`` instead of stderr (idempotent)."""
    from pyspark.logger import PySparkLogger

    with _guard:
        for name in PYSPARK_ERROR_LOGGERS:
            logger = PySparkLogger.getLogger(name)
            logger.propagate = False
            current: Optional[logging.FileHandler] = next(
                (h for h in logger.handlers if isinstance(h, logging.FileHandler)), None)
            if current is not None and Path(current.baseFilename) == log_file.resolve():
                continue
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
                handler.close()
            log_file.parent.mkdir(parents=True, exist_ok=True)
            logger.addHandler(logging.FileHandler(log_file, delay=True))
