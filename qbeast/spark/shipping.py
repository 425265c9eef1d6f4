"""Getting the engine's own Python code onto the machines that run Spark tasks.

Why this exists: the writer, the reader and the operations run Python functions inside Spark tasks
(Arrow UDFs, ``mapInArrow`` functions, the ``qbeast`` data source). Spark pickles those functions
by reference to their modules, so every Python worker has to ``import qbeast``. In local mode the
workers are children of the driver and see its installation; on a cluster (standalone, YARN,
Kubernetes) or behind Spark Connect they run elsewhere, and asking users to install the engine on
every worker is exactly the manual step a cluster user should not need.

So the engine packs the ``qbeast`` package that the driver imported into one zip (built once per
process, named after a hash of its content) and hands it to Spark, which copies it to every
executor and puts it on the Python workers' ``sys.path``:

* classic sessions: ``SparkContext.addPyFile``;
* Spark Connect sessions: ``SparkSession.addArtifacts(..., pyfile=True)`` (session-scoped).

Only the pure-Python ``qbeast`` package travels. Its third-party dependencies (pyarrow, numpy,
pyspark) must exist in the workers' Python; that is what ``spark.pyspark.python`` /
``PYSPARK_PYTHON`` point to (see docs/cluster.md).
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.spark.settings import SHIP_ENGINE

logger = logging.getLogger("qbeast.spark.shipping")

#: Session setting that controls shipping: "auto" ships when tasks may run outside this process
#: (a non-local master or Spark Connect); "true" always ships; "false" never does (the workers
#: have the engine installed already). See :data:`qbeast.spark.settings.SHIP_ENGINE`.
SHIP_ENGINE_KEY = SHIP_ENGINE.key
SHIP_ENGINE_VALUES = SHIP_ENGINE.choices

#: Files of the package that never go into the archive (byte code is rebuilt by the workers).
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_SKIPPED_DIRS = ("__pycache__",)

_lock = threading.Lock()
_archive: Path | None = None
_shipped_to: set[str] = set()


def ship_engine_mode(conf: Mapping[str, Any]) -> str:
    """The validated value of :data:`SHIP_ENGINE_KEY` in ``conf`` ("auto" when absent)."""
    return str(SHIP_ENGINE.read_from(conf))


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's JVM: ``local``, ``local[N]``,
    ``local[*]``, ``local[N,F]`` (not ``local-cluster[...]``)."""
    name = master.strip().lower()
    return name == "local" or name.startswith("local[")


def tasks_leave_process(master: str | None, remote: str | None) -> bool:
    """True when Spark tasks may run in Python workers that do not share this installation.

    ``local``, ``local[N]``, ``local[*]`` and ``local[N,F]`` run every task on this machine with
    this interpreter. Any other master (``spark://``, ``yarn``, ``k8s://``, ``local-cluster[...]``)
    and any Spark Connect endpoint runs them elsewhere.
    """
    if remote:
        return True
    if not master:
        return False
    return not is_local_master(master)


def engine_package_dir() -> Path:
    """The folder of the ``qbeast`` package this process imported (editable or installed)."""
    import qbeast

    return Path(qbeast.__file__).resolve().parent


def _package_files(package_dir: Path) -> list[Path]:
    """The package's files in a stable order, without byte code and cache folders."""
    files = []
    for path in package_dir.rglob("*"):
        relative = path.relative_to(package_dir)
        if any(part in _SKIPPED_DIRS for part in relative.parts):
            continue
        if path.is_file() and not path.name.endswith(_SKIPPED_SUFFIXES):
            files.append(path)
    return sorted(files)


def build_engine_archive(package_dir: Path, destination_dir: Path) -> Path:
    """Zip ``package_dir`` as a top-level ``qbeast/`` package into ``destination_dir``.

    The file name carries a hash of the content: Spark refuses to register two different files
    under one name in a session, while adding the very same file again is a no-op.
    """
    files = _package_files(package_dir)
    if not (package_dir / "__init__.py").is_file():
        raise InvalidOptionError(f"{package_dir} is not a Python package (no __init__.py)")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(package_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    target = destination_dir / f"qbeast-engine-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    partial = target.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            name = f"{package_dir.name}/{path.relative_to(package_dir).as_posix()}"
            # A fixed timestamp keeps the archive bytes a function of the sources alone.
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    os.replace(partial, target)
    return target


def engine_archive() -> Path:
    """The zip of the running engine, built on first use and reused for the process's lifetime."""
    global _archive
    with _lock:
        if _archive is None or not _archive.is_file():
            started = time.monotonic()
            folder = Path(tempfile.mkdtemp(prefix="qbeast-engine-"))
            atexit.register(shutil.rmtree, folder, True)
            _archive = build_engine_archive(engine_package_dir(), folder)
            logger.info(
                "engine archive %s built (%d bytes, %.2fs)",
                _archive, _archive.stat().st_size, time.monotonic() - started,
            )
        return _archive


def is_connect_session(spark: Any) -> bool:
    """True for a Spark Connect session (it has no SparkContext and talks gRPC to a server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _session_key(spark: Any) -> str:
    """Identity of a running session: the Connect session id or the Spark application id."""
    if is_connect_session(spark):
        return f"connect:{spark.session_id}"
    return f"classic:{spark.sparkContext.applicationId}"


def ship_engine(spark: Any) -> Path:
    """Make ``qbeast`` importable in the Python workers of ``spark``'s tasks; idempotent.

    Returns the archive that was shipped. Safe to call for every ``get_or_create_session``: the
    second call for the same session only looks up a set.
    """
    archive = engine_archive()
    key = _session_key(spark)
    with _lock:
        if key in _shipped_to:
            return archive
        if is_connect_session(spark):
            spark.addArtifacts(str(archive), pyfile=True)
        else:
            spark.sparkContext.addPyFile(str(archive))
        _shipped_to.add(key)
    logger.info("engine archive %s shipped to session %s", archive.name, key)
    return archive
