"""The embedded catalog: a folder holding a Derby metastore and the Spark warehouse.

Why the engine owns it: the dbt adapter opens a project's catalog in its own driver, and
``qbeast serve`` opens the same folder to serve it to many clients. Both must lay it out the same
way (``metastore_db/``, ``warehouse/``, Derby's home and log) and both must refuse to start while
another process holds it: Derby admits one process, and a second one waits and fails after a
minute and a half with pages of Hive traces.

Two locks say who holds a catalog. Each engine process takes an exclusive OS lock on
``.qbeast-catalog.lock`` before it starts its driver and keeps it until it exits (the OS releases
it after a crash too), so a second process learns at once that the catalog is taken. A process
that does not take it (a notebook, an older dbt-qbeast) is still seen through Derby's own lock
on ``metastore_db/dbex.lck``, which exists once a driver has opened the database.

Nothing here imports pyspark: these are paths, settings and file locks.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

#: The default catalog folder, relative to the project (the dbt adapter's ``catalog_dir``) or
#: to the working directory (``qbeast serve``).
DEFAULT_FOLDER = ".qbeast"
#: Spark's settings that name the warehouse and the metastore database.
WAREHOUSE_KEY = "spark.sql.warehouse.dir"
METASTORE_URL_KEY = "spark.hadoop.javax.jdo.option.ConnectionURL"
#: Hive's metastore refuses a change of a column's type, and Spark writes a data source table
#: whose schema Hive cannot hold (a column comment over Derby's 256 characters, say) as one
#: placeholder column: altering such a table (a column comment, added columns) is that change.
#: Spark keeps the real schema in the table's properties, so the check only stands in its way.
ALTER_SCHEMA_SETTING = ("spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes", "false")
#: The lock file inside the catalog folder; it holds the pid of the process that has it.
LOCK_FILE = ".qbeast-catalog.lock"

_guard = threading.Lock()
_held: dict[Path, int] = {}


@dataclass(frozen=True)
class EmbeddedCatalog:
    """One catalog folder (absolute): where its parts live and who holds it."""

    folder: Path
    DEFAULT_FOLDER: ClassVar[str] = DEFAULT_FOLDER

    @classmethod
    def at(cls, folder: str | os.PathLike[str], base: Path | None = None) -> EmbeddedCatalog:
        """The catalog at ``folder`` (``~`` and ``$VARS`` expanded; relative to ``base``, by
        default the working directory)."""
        path = Path(os.path.expandvars(os.fspath(folder))).expanduser()
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        return cls(path.resolve())

    @property
    def warehouse(self) -> Path:
        return self.folder / "warehouse"

    @property
    def metastore(self) -> Path:
        return self.folder / "metastore_db"

    def spark_conf(self) -> dict[str, str]:
        """The warehouse and the Derby metastore of this folder, as Spark settings (with
        :data:`ALTER_SCHEMA_SETTING`)."""
        return {
            WAREHOUSE_KEY: str(self.warehouse),
            METASTORE_URL_KEY: f"jdbc:derby:;databaseName={self.metastore};create=true",
            ALTER_SCHEMA_SETTING[0]: ALTER_SCHEMA_SETTING[1],
        }

    def java_options(self) -> list[str]:
        """Driver Java options that keep Derby's files in the folder (``derby.log`` would
        otherwise land in the working directory)."""
        return [f"-Dderby.system.home={self.folder}",
                f"-Dderby.stream.error.file={self.folder / 'derby.log'}"]

    def derby_holder(self) -> Path | None:
        """Derby's lock file when another process has the metastore open, else None.

        Derby keeps an exclusive POSIX record lock on ``metastore_db/dbex.lck`` while a process
        has the database open; this process can test it without keeping it. Only meaningful
        before this process starts its own driver (which would hold the same lock).
        """
        lock_file = self.metastore / "dbex.lck"
        if not lock_file.is_file():
            return None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: Derby's own error will have to do
            return None
        try:
            fd = os.open(lock_file, os.O_RDWR)
        except OSError:
            return None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return lock_file
        finally:
            os.close(fd)  # also releases the test lock
        return None

    def hold(self) -> Path | None:
        """Take this process's lock on the catalog (kept until the process exits).

        Returns None when this process has the catalog to itself (now or already), else the lock
        file another process holds (ours, or Derby's). The folder must exist.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: Derby's own error will have to do
            return None
        with _guard:
            if self.folder in _held:
                return None
            fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return self.folder / LOCK_FILE
            derby = self.derby_holder()
            if derby is not None:
                os.close(fd)  # releases ours
                return derby
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            _held[self.folder] = fd
            return None

    def busy_message(self, lock_file: Path) -> str:
        """What to tell a user whose process found the catalog held (``lock_file``)."""
        pid = holder_pid(lock_file)
        who = f"process {pid}" if pid is not None else "another process"
        return (
            f"the embedded catalog {self.folder} is in use by another process (a dbt command, "
            f"`qbeast serve`, an IDE or a notebook on this project: {who} holds {lock_file}); "
            "the embedded catalog admits one process at a time. Wait for that process to finish, "
            "or share the catalog through one server (`qbeast serve`, docs/serve.md) or a Hive "
            "metastore service"
        )


def holder_pid(lock_file: Path) -> int | None:
    """The pid written in one of our lock files (None for Derby's, or when unreadable)."""
    if lock_file.name != LOCK_FILE:
        return None
    try:
        text = lock_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
