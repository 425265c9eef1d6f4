"""How one operation's Spark jobs reach one table's data files, decided once: :class:`FileAccess`.

A table on the local disk is read and written by Spark where it lies, as always. A table on an
object store (``s3://``, ``gs://``, ``abfss://``) is reached through the engine's own storage
layer (:mod:`qbeast.storage.object_store`), because a plain ``pip install pyspark`` has no Hadoop
connector for those schemes:

* **writes** are staged in a local folder (``spark.qbeast.storage.mirrorDir``) by Spark's own
  parquet writer, exactly as for a local table, and each finished file is uploaded to the table
  (:class:`qbeast.spark.write.staging.StagedFiles`); the uploaded file becomes the local copy;
* **reads** hand Spark local copies of the files the planner chose (:meth:`FileAccess.readable`),
  fetched once into the mirror (:class:`qbeast.storage.mirror.LocalMirror`): data files never
  change, so a copy stays right, and every later read of the file runs at local-disk speed.

Both need the driver and the executors to share one disk, which is true of ``local[*]``
sessions (the engine's default and the dbt adapter's embedded mode).

A session whose tasks run on other machines (a ``spark://``, ``yarn`` or ``k8s://`` master, or
Spark Connect) cannot use this disk:

* Spark's own parquet reader (SQL through the JVM read bridge, and the DataFrame API of a
  session that has the bridge) reads **by signed URL** (:meth:`FileAccess.bridge_readable`,
  ``spark.qbeast.storage.bridgeFiles``): the planner signs a GET URL per file with the store's
  credentials and hands Spark a path of the bridge's ``qbeasthttp`` file system, which fetches
  byte ranges of it on the executors;
* otherwise reads, and every ``qbeast.write``, run in **Arrow tasks**
  (:attr:`FileAccess.arrow_tasks`, :mod:`qbeast.spark.read.arrow_tasks`,
  :mod:`qbeast.spark.write.task_files`): each task opens or uploads its files through the
  storage layer, with the store settings the driver resolved.

Row-level changes, optimize and convert read the old files by signed URL
(:meth:`FileAccess.spark_readable`); their new files are written in Arrow tasks or by tasks that
upload their rewrites (:class:`qbeast.spark.write.staging.TaskUploads`). A session without
signed reads (no bridge jar, ``bridgeFiles=copies``) is refused them with an error that says
what works instead (:meth:`FileAccess.check_native`).

A session whose Hadoop has a file system for the scheme (a cluster with hadoop-aws,
gcs-connector or hadoop-azure on its class path: :func:`hadoop_file_system`) lets Spark's
parquet reader open the files through it instead (``bridgeFiles=hadoop``, what ``auto`` picks
on a cluster master; ``local[*]`` keeps its faster local copies): no copies, no signed URLs,
the executors use the session's ``fs.*`` settings. New files are still written through the
storage layer (staged and uploaded, or uploaded by Arrow tasks): each lands once under its final
name, where Spark's own writer on an object store would rename, which S3 does by copying. One
log line per session and scheme says which way a session reaches its tables and why.

Which of these ways an operation takes is decided once, when it starts
(:meth:`FileAccess.decide`: the session, the table location and the settings), and the
decision is handed down to the wings' jobs: a write, a change, an optimize or a read never
decides again in the middle (:func:`decisions` counts the decisions, for tests). The helpers
that are not about one table stay functions here: the session's mirror (:func:`mirror`,
:func:`mirror_dir`), its Hadoop settings for the storage layer (:func:`apply_session_settings`),
whether Spark's own writers can write a location (:func:`spark_writes_location`), signed-URL
paths (:func:`signed_path`).
"""
from __future__ import annotations

import base64
import dataclasses
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.shipping import is_connect_session, tasks_leave_process
from qbeast.storage import SCHEMES, Storage, aws_config, scheme_of, set_session_settings, storage_for
from qbeast.storage.mirror import LocalMirror, default_root, private_folder

logger = logging.getLogger(__name__)

_announced: set[tuple[str, str]] = set()
#: per classic session and scheme: (scheme, class) of the Hadoop file system that serves it
_hadoop_found: dict[tuple[str, str], tuple[str, str] | None] = {}
#: the schemes a Hadoop file system may serve an object-store scheme under, in order of
#: preference: an ``s3`` file system where a cluster has one (EMR's), else hadoop-aws's ``s3a``
#: (the same bucket and key)
_HADOOP_SCHEMES = {"s3": ("s3", "s3a"), "s3a": ("s3a",), "gs": ("gs",), "abfss": ("abfss",)}
#: per Spark Connect client session: whether its server reads signed URLs
_server_signed: dict[str, bool] = {}
#: the Hadoop S3A settings the storage layer takes from a session
_HADOOP_S3A_KEYS = ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token",
                    "fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access",
                    "fs.s3a.connection.ssl.enabled")
_lock = threading.Lock()
_decided = 0

#: the URI scheme of the bridge's read-only Hadoop file system over signed URLs
#: (``io.dbtqbeast.bridge.SignedUrlFileSystem``; the path layout is that class's)
SIGNED_SCHEME = "qbeasthttp"


def decisions() -> int:
    """How many times this process decided how a table's data files are reached
    (:meth:`FileAccess.decide`): tests count the decisions of one operation with it."""
    with _lock:
        return _decided


@dataclasses.dataclass(frozen=True)
class FileAccess:
    """How one operation's Spark jobs reach the data files of the table at ``location``,
    decided once from the session, the location and the settings (:meth:`decide`) and handed
    to every job of the operation.

    ``mode`` is how Spark's own parquet reader opens the table's files where its tasks run
    (the engine's native scans: DataFrame reads, the scans of row-level changes, optimize and
    convert): ``local`` (a table on the local disk), ``copies`` (local copies in the mirror:
    tasks share this disk), ``hadoop`` (through the session's Hadoop file system for the
    scheme), ``signed`` (signed URLs, read by the bridge's file system), or None when it
    cannot (tasks elsewhere, neither signed reads nor a connector; or ``refusal``).
    ``arrow_tasks``: reads and writes of the table go in Arrow tasks through the storage layer
    (an object-store table in a session whose tasks leave this process: a cluster master, a
    Spark Connect server). ``files_mode``: ``spark.qbeast.storage.bridgeFiles`` resolved for
    the table's scheme (``hadoop``, ``copies`` or ``signed``; None for a local table or when
    refused). ``signed_reads``: the session's parquet reader takes signed-URL paths (the JVM
    read bridge loaded, or a Connect server that installs its file system) and the setting
    lets it. ``hadoop``: the (scheme, class) of the session's Hadoop file system for the
    scheme, None without one. ``refusal``: why the setting cannot be honoured
    (``bridgeFiles=hadoop`` without a connector, or from a Spark Connect client), raised by the
    first call that needs Spark's reader, never by the decision itself.
    """

    location: str
    scheme: str | None
    remote: bool
    arrow_tasks: bool
    mode: str | None
    files_mode: str | None = None
    signed_reads: bool = False
    hadoop: tuple[str, str] | None = None
    refusal: InvalidOptionError | None = dataclasses.field(default=None, compare=False, repr=False)
    spark: Any = dataclasses.field(default=None, compare=False, repr=False)

    @classmethod
    def decide(cls, spark: Any, location: str) -> FileAccess:
        """How ``spark``'s jobs reach the data files of the table at ``location``. The first
        decision of a session for an object-store scheme hands the session's Hadoop S3A
        settings to the storage layer (:func:`apply_session_settings`) and says in one log line
        how the session reaches that scheme's tables (and one more for Hadoop or signed reads)."""
        global _decided
        with _lock:
            _decided += 1
        if not is_remote(location):
            return cls(location, None, False, arrow_tasks=False, mode="local", spark=spark)
        scheme = scheme_of(location) or ""
        connect = spark is not None and is_connect_session(spark)
        master = ("a Spark Connect server" if connect
                  else spark.sparkContext.master if spark is not None else "local")
        arrow_tasks = spark is not None and (connect or tasks_leave_process(master, None))
        hadoop = hadoop_file_system(spark, scheme)
        refusal: InvalidOptionError | None = None
        files_mode: str | None
        try:
            files_mode = _files_mode(spark, scheme)
        except InvalidOptionError as exc:
            refusal, files_mode = exc, None
        signed_reads = _signed_reads(spark)
        mode: str | None = None
        if refusal is None:
            if files_mode == "hadoop":
                mode = "hadoop"
            elif signed_reads:
                mode = "signed"
            elif not arrow_tasks:
                mode = "copies"
        access = cls(location, scheme, True, arrow_tasks=arrow_tasks, mode=mode,
                     files_mode=files_mode, signed_reads=signed_reads, hadoop=hadoop,
                     refusal=refusal, spark=spark)
        access._announce(master)
        return access

    def _announce(self, master: str) -> None:
        """The log lines of a session's first decision for the scheme (see :meth:`decide`)."""
        spark, scheme = self.spark, self.scheme or ""
        if _first_time(spark, scheme):
            if self.arrow_tasks:
                logger.info(
                    "%s:// tables: writes (qbeast.write, optimize), the rewrites of row-level "
                    "changes, and reads where the JVM read bridge cannot read signed URLs, run "
                    "in tasks that open and upload the files through the engine's storage layer "
                    "with the settings resolved on this driver (master %s, %s)", scheme, master,
                    self._connector_note())
            else:
                logger.info(
                    "%s:// tables: data files go through the engine's storage layer (master %s, "
                    "%s): new files are staged in %s and uploaded, reads open local copies kept "
                    "there unless Hadoop reads them", scheme, master,
                    self._connector_note(), mirror_dir(spark))
        if self.mode == "hadoop" and _first_time(spark, f"{scheme}+hadoop"):
            served, klass = self.hadoop or ("?", "?")
            logger.info(
                "%s:// tables: Spark's parquet reader opens their files as %s:// paths through "
                "Hadoop's %s (master %s; the executors use the session's fs.%s.* settings, not "
                "signed URLs or local copies); new files are written through the engine's "
                "storage layer", scheme, served, klass, master, served)
        if self.mode == "signed" and _first_time(spark, f"{scheme}+signed"):
            logger.info(
                "%s:// tables in SQL: Spark's parquet reader opens their files by ranged GETs on "
                "URLs signed on this driver, valid %d s (executors need no Hadoop connector and "
                "no credentials; %s)", scheme, settings.SIGNED_URL_SECONDS.read(spark),
                self._connector_note())

    def _connector_note(self) -> str:
        """Whether Hadoop has a file system for the scheme, and whether reads use it (log
        lines), from this decision's own facts."""
        spark, scheme = self.spark, self.scheme or ""
        if spark is None:
            return "no session"
        if is_connect_session(spark):
            return "the server's Hadoop connectors are not used"
        if self.hadoop is None:
            return f"Hadoop has no {scheme} connector"
        if self.files_mode == "hadoop":
            return (f"Spark's parquet reader opens them through Hadoop's {self.hadoop[0]} "
                    f"connector ({self.hadoop[1]})")
        return (f"Hadoop has a {self.hadoop[0]} connector ({self.hadoop[1]}), not used for reads: "
                f"{settings.BRIDGE_FILES.key}={settings.BRIDGE_FILES.read(spark)}")

    # -- what the operation's jobs ask --------------------------------------------------------

    def native_reads(self) -> bool:
        """Whether Spark's own parquet reader opens the table's files wherever its tasks run:
        a local table; an object-store table read through the session's Hadoop file system for
        its scheme, or by signed URL. Otherwise a session whose tasks run elsewhere reads and
        changes such a table in Arrow tasks, or is refused (:meth:`check_native`)."""
        if not self.remote:
            return True
        self._check_refusal()
        return self.mode in ("hadoop", "signed")

    def check_native(self) -> None:
        """Refuse, naming the table, an operation that reads its old files with Spark's own
        parquet reader (row-level changes, optimize, convert) in a session that cannot hand
        them to it: an object-store table seen from tasks elsewhere (a cluster master, a Spark
        Connect server) read neither through Hadoop nor by signed URL (:meth:`native_reads`).
        Called before anything is read or written."""
        if self.arrow_tasks and not self.native_reads():
            raise self._unreachable()

    def check_shared_disk(self) -> None:
        """Refuse an object-store table whose files Spark's tasks would write or read in this
        machine's staging folder or mirror, in a session whose tasks do not share this disk."""
        if self.remote and self.arrow_tasks:
            raise self._unreachable()

    def reads_local_copies(self) -> bool:
        """Whether Spark's parquet reader in this session opens local copies of the files of
        this object-store table (``copies`` mode), so that a file this process uploads is worth
        keeping as its copy."""
        if not self.remote:
            return False
        self._check_refusal()
        return self.files_mode == "copies"

    def check_bridge(self) -> None:
        """Whether the JVM read bridge can read this object-store table (it always can with
        signed URLs or through Hadoop; local copies only where tasks share this disk)."""
        if not self.remote:
            return
        self._check_refusal()
        if self.files_mode == "copies":
            self.check_shared_disk()

    def mirror(self) -> LocalMirror:
        """The session's mirror (:func:`mirror`): staged uploads and local copies."""
        return mirror(self.spark)

    # -- the files as Spark opens them -----------------------------------------------------------

    def readable(self, locations: Iterable[str], sizes: Sequence[int | None] | None = None) -> list[str]:
        """``locations`` as tasks on this disk open them: local paths unchanged, object-store
        files as local copies (fetched now when not yet copied; ``sizes`` from the log check
        each copy). Refused where tasks do not share this disk (:meth:`check_shared_disk`)."""
        locations = list(locations)
        remote = [i for i, location in enumerate(locations) if is_remote(location)]
        if not remote:
            return locations
        self.check_shared_disk()
        out = list(locations)
        local = self.mirror()
        for storage, indexes in _by_store(locations, remote):
            files = [(locations[i], sizes[i] if sizes is not None else None) for i in indexes]
            for i, path in zip(indexes, local.fetch(storage, files)):
                out[i] = path
        return out

    def spark_readable(self, locations: Sequence[str],
                       sizes: Sequence[int | None] | None = None) -> list[str]:
        """``locations`` as Spark's own parquet reader opens them (``mode``: the engine's
        native scans: DataFrame reads, the scans of row-level changes, optimize and convert):
        local paths as they are; object-store files through the session's Hadoop file system
        (:meth:`hadoop_path`), as signed-URL paths, or as local copies (:meth:`readable`).
        ``sizes`` (from the log; unknown ones are looked up) check the copies and size the
        signed reads. Each call signs anew: a caller that matches paths across scans keeps the
        first ones."""
        if sizes is None:
            sizes = [None] * len(locations)
        return self._opened(locations, sizes, self.mode)

    def bridge_readable(self, locations: Sequence[str], sizes: Sequence[int | None]) -> list[str]:
        """``locations`` as the JVM read bridge hands them to Spark's parquet reader: local
        paths unchanged; object-store files through the session's Hadoop file system
        (``hadoop`` mode), as local copies (``copies``) or as paths of the bridge's signed-URL
        file system that carry each file's size and URL (``signed``)."""
        return self._opened(locations, sizes, self.files_mode)

    def _opened(self, locations: Sequence[str], sizes: Sequence[int | None],
                mode: str | None) -> list[str]:
        out = list(locations)
        remote = [i for i, location in enumerate(locations) if is_remote(location)]
        if not remote:
            return out
        self._check_refusal()
        if mode == "hadoop":
            for i in remote:
                out[i] = self.hadoop_path(locations[i])
            return out
        if mode != "signed":  # copies (refused where tasks do not share this disk)
            copies = self.readable([locations[i] for i in remote], [sizes[i] for i in remote])
            for i, path in zip(remote, copies):
                out[i] = path
            return out
        seconds = settings.SIGNED_URL_SECONDS.read(self.spark)
        for storage, indexes in _by_store(locations, remote):
            known = [size if size is not None else storage.stat(locations[i]).size
                     for i in indexes for size in (sizes[i],)]
            urls = storage.signed_urls([locations[i] for i in indexes], seconds)
            for i, size, url in zip(indexes, known, urls):
                out[i] = signed_path(url, size, locations[i].rsplit("/", 1)[-1])
        return out

    def hadoop_path(self, location: str) -> str:
        """``location`` (an object-store file or folder) as this session's Hadoop file system
        for its scheme names it: the same bucket and key, under the scheme that file system
        serves (``s3://b/k`` is ``s3a://b/k`` where Hadoop has only hadoop-aws's s3a)."""
        scheme = scheme_of(location) or ""
        found = self.hadoop if scheme == self.scheme else hadoop_file_system(self.spark, scheme)
        if found is None:
            raise InvalidOptionError(f"{location}: {_no_hadoop_reason(self.spark, scheme)}",
                                     option="location", value=location)
        return found[0] + location[len(scheme):]

    # -- refusals ------------------------------------------------------------------------------

    def _check_refusal(self) -> None:
        if self.refusal is not None:
            raise self.refusal

    def _unreachable(self) -> InvalidOptionError:
        """Why this session's Spark tasks cannot read this object-store table's files with
        Spark's parquet reader, and what works instead."""
        location, spark = self.location, self.spark
        if spark is not None and is_connect_session(spark):
            from qbeast.spark.bridge import SIGNED_FS_CLASS, SIGNED_FS_KEY

            return InvalidOptionError(
                f"{location}: row-level changes (delete, update, merge), optimize and convert of "
                "tables on an object store through Spark Connect need a server that reads their "
                "files by signed URL: `qbeast serve`, whose launch installs the bridge's file "
                f"system ({SIGNED_FS_KEY}={SIGNED_FS_CLASS}), and {settings.BRIDGE_FILES.key} "
                "not 'copies'. qbeast.write and the DataFrame API "
                "(QbeastTable.to_df / sample) work without: Arrow tasks on the server write and "
                "read the files through the storage layer (docs/cluster.md)",
                option="location", value=location,
            )
        master = spark.sparkContext.master if spark is not None else "local"
        return InvalidOptionError(
            f"{location}: row-level changes (delete, update, merge), optimize and convert of "
            "tables on an object store read their files with Spark's parquet reader, which on "
            f"this master (master is {master!r}) cannot use local copies: executors elsewhere "
            "cannot see them. They need the files read through a Hadoop connector for "
            f"{self.scheme}:// on the driver's and executors' class paths, or by signed URL (the "
            f"JVM read bridge loaded: qbeast.register), and {settings.BRIDGE_FILES.key} not "
            "'copies'. "
            "qbeast.write writes the table in Arrow tasks, and the DataFrame API "
            "(QbeastTable.to_df / sample) reads it, without either (docs/cluster.md)",
            option="location", value=location,
        )


def _by_store(locations: Sequence[str], indexes: Iterable[int]) -> Iterator[tuple[Storage, list[int]]]:
    """The object-store files among ``indexes`` of ``locations`` grouped by scheme, each group
    with the storage that serves it (copies and signed URLs are made per store)."""
    groups: dict[str, list[int]] = {}
    for i in indexes:
        groups.setdefault(scheme_of(locations[i]) or "", []).append(i)
    for group in groups.values():
        yield storage_for(locations[group[0]]), group


# -- what is not about one table: the session's helpers ------------------------------------------


def is_remote(location: str) -> bool:
    """True for a location on an object store (``s3://``, ``s3a://``, ``gs://``, ``abfss://``)."""
    return isinstance(location, str) and scheme_of(location) in SCHEMES


def mirror_dir(spark: Any) -> str:
    """The session's local folder for staged uploads and local copies: this user's own
    (:func:`qbeast.storage.mirror.default_root`, owner-only), or the one the session names."""
    configured = settings.MIRROR_DIR.read(spark) if spark is not None else None
    if configured:
        return private_folder(os.path.expanduser(configured), setting=settings.MIRROR_DIR.key,
                              tighten=False)
    return private_folder(default_root(), setting=settings.MIRROR_DIR.key, tighten=True)


def mirror(spark: Any) -> LocalMirror:
    """The session's mirror (its folder and size bound read from the session's settings)."""
    max_bytes = settings.MIRROR_MAX_BYTES.read(spark) if spark is not None else settings.MIRROR_MAX_BYTES.default
    return LocalMirror(mirror_dir(spark), max_bytes)


def apply_session_settings(spark: Any) -> dict[str, str]:
    """Hand the session's Hadoop S3A settings (``fs.s3a.access.key``, ``fs.s3a.endpoint``, ...)
    to the storage layer, for stores built from now on (below the environment); what was found.

    Read from the session's Hadoop configuration (``spark.hadoop.fs.s3a.*`` confs and the
    cluster's ``core-site.xml``); a Spark Connect session has none to read here.
    """
    if spark is None or is_connect_session(spark):
        return {}
    try:
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - classic sessions
        conf = {key: hadoop.get(key) for key in _HADOOP_S3A_KEYS if _set_by_user(hadoop, key)}
    except Exception:  # noqa: BLE001 - no JVM handle: the plain confs are what there is
        conf = {key: spark.conf.get(f"spark.hadoop.{key}", None) for key in _HADOOP_S3A_KEYS}
    found = aws_config.from_hadoop({k: v for k, v in conf.items() if v is not None})
    set_session_settings("s3", found)
    return found


def _set_by_user(hadoop: Any, key: str) -> bool:
    """Whether a Hadoop setting was set (a conf, a site file), not only Hadoop's own default
    (``core-default.xml`` has ``fs.s3a.path.style.access=false``, which is no one's choice)."""
    if hadoop.get(key) is None:
        return False
    sources = list(hadoop.getPropertySources(key) or [])
    return not sources or any("default" not in str(source) for source in sources)


def _first_time(spark: Any, scheme: str) -> bool:
    """True the first time a session reaches a scheme's tables: its Hadoop S3A settings are
    handed to the storage layer then, before a store is built."""
    key = (_session_key(spark), scheme)
    with _lock:
        first = key not in _announced
        _announced.add(key)
    if first:
        apply_session_settings(spark)
    return first


def _files_mode(spark: Any, scheme: str | None = None) -> str:
    """How Spark's own parquet reader (the JVM read bridge, DataFrame reads, the scans of
    changes) opens object-store files in this session: ``hadoop`` (through the Hadoop file
    system the session has for ``scheme``), ``copies`` (local copies in the mirror) or
    ``signed`` (signed URLs): see ``spark.qbeast.storage.bridgeFiles``.

    ``auto`` means copies where tasks share this disk (``local[*]``: measured faster than the
    connector, cold or warm, benchmarks/results/bucket_reads.md); where they run elsewhere, hadoop
    when the session's Hadoop has a file system for ``scheme`` (the cluster's own credentials,
    no bearer URL in its logs), else signed. Without ``scheme``, only whether the session reads
    copies or signed URLs where it uses no connector. ``hadoop`` for a scheme without one, or
    in a Spark Connect client, is refused, naming the setting."""
    configured = settings.BRIDGE_FILES.read(spark)
    if configured not in ("auto", "hadoop"):
        return str(configured)
    if spark is not None and is_connect_session(spark):
        if configured == "hadoop" and scheme is not None:
            raise _no_hadoop_error(spark, scheme)
        return "signed"  # the server's tasks never see this client's disk
    master = spark.sparkContext.master if spark is not None else "local"
    elsewhere = tasks_leave_process(master, None)
    if scheme is not None and (configured == "hadoop" or elsewhere):
        if hadoop_file_system(spark, scheme) is not None:
            return "hadoop"
        if configured == "hadoop":
            raise _no_hadoop_error(spark, scheme)
    return "signed" if elsewhere else "copies"


def _no_hadoop_error(spark: Any, scheme: str) -> InvalidOptionError:
    return InvalidOptionError(
        f"{settings.BRIDGE_FILES.key}=hadoop, but {_no_hadoop_reason(spark, scheme)}. Put the "
        "connector's jars on the driver's and executors' class paths (for s3: hadoop-aws and "
        "the AWS SDK bundle of the cluster's Hadoop version; docs/cluster.md), or choose one of "
        "auto, copies, signed",
        option=settings.BRIDGE_FILES.key, value="hadoop")


def spark_writes_location(spark: Any, location: str) -> bool:
    """Whether Spark's own writers (a plain parquet or Delta table's ``CREATE TABLE ... AS
    SELECT``) can write at ``location`` in this session: a local path, or an object-store URI
    whose exact scheme a Hadoop file system of the session serves. Qbeast tables do not need
    it (the engine writes object stores itself); tools use it to refuse a plain table on a
    bucket up front instead of with Hadoop's "No FileSystem for scheme" after the query ran.
    A Spark Connect client cannot see its server's class path: True there (the server says)."""
    if not is_remote(location) or spark is None or is_connect_session(spark):
        return True
    scheme = (scheme_of(location) or "").lower()
    found = hadoop_file_system(spark, scheme)
    return found is not None and found[0] == scheme  # s3a's file system does not serve s3://


def hadoop_file_system(spark: Any, scheme: str) -> tuple[str, str] | None:
    """The Hadoop file system this session has for object-store tables at ``scheme``: (the
    scheme it serves, its class), e.g. ``("s3a", "org.apache.hadoop.fs.s3a.S3AFileSystem")``
    for ``s3://`` tables where hadoop-aws is on the class path; None without one. Classic
    sessions only (a Spark Connect client cannot see its server's class path). Looked up once
    per session and scheme: a class that does not load counts as none."""
    if spark is None or is_connect_session(spark) or scheme not in _HADOOP_SCHEMES:
        return None
    key = (_session_key(spark), scheme)
    with _lock:
        if key in _hadoop_found:
            return _hadoop_found[key]
    found: tuple[str, str] | None = None
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - classic sessions
        conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
        for candidate in _HADOOP_SCHEMES[scheme]:
            try:
                cls = jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(candidate, conf)
            except Exception:  # noqa: BLE001 - UnsupportedFileSystemException, a class not found
                continue
            found = (candidate, str(cls.getName()))
            break
    except Exception:  # noqa: BLE001 - no JVM handle: no Hadoop file system to use
        found = None
    with _lock:
        _hadoop_found[key] = found
    return found


def _no_hadoop_reason(spark: Any, scheme: str) -> str:
    if spark is not None and is_connect_session(spark):
        return (f"a Spark Connect client cannot use its server's Hadoop file systems for "
                f"{scheme}:// tables")
    candidates = " or ".join(f"{c}://" for c in _HADOOP_SCHEMES.get(scheme, (scheme,)))
    return f"this session's Hadoop has no file system for {candidates} (no connector loads)"


def _signed_reads(spark: Any) -> bool:
    """Whether Spark's own parquet reader in this session opens object-store files by signed
    URL, in ``signed`` mode (:func:`_files_mode`): a classic session whose JVM read bridge (and
    its file system) is loaded, or a Spark Connect session whose server has the bridge's file
    system installed (:func:`_server_reads_signed_urls`; ``qbeast serve`` does). The DataFrame
    API then reads such tables natively, as SQL does, instead of in Arrow tasks."""
    if spark is None or _files_mode(spark) != "signed":
        return False
    if is_connect_session(spark):
        return _server_reads_signed_urls(spark)
    from qbeast.spark.bridge import bridge_active

    return bridge_active(spark)


def _server_reads_signed_urls(spark: Any) -> bool:
    """Whether the Spark Connect server behind ``spark`` resolves signed-URL paths: its launch
    installed the bridge's file system (``spark.hadoop.fs.qbeasthttp.impl``, set with the
    bridge jar by :func:`qbeast.spark.bridge.session_conf`, so by ``qbeast serve``). Asked once
    per client session."""
    from qbeast.spark.bridge import SIGNED_FS_CLASS, SIGNED_FS_KEY

    key = _session_key(spark)
    with _lock:
        known = _server_signed.get(key)
    if known is None:
        try:
            known = spark.conf.get(SIGNED_FS_KEY, None) == SIGNED_FS_CLASS
        except Exception:  # noqa: BLE001 - a server that will not say cannot be relied on
            known = False
        with _lock:
            _server_signed[key] = known
    return known


def signed_path(url: str, size: int, name: str) -> str:
    """The path under which the bridge's signed-URL file system reads the ``size`` bytes at
    ``url`` (``name`` is a label): ``qbeasthttp://signed/<size>/<url in base64url>/<name>``."""
    encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return f"{SIGNED_SCHEME}://signed/{int(size)}/{encoded}/{name}"


def current_session() -> Any:
    """The session a callback from the JVM serves (the active one, else the one created)."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession._instantiatedSession  # noqa: SLF001


def _session_key(spark: Any) -> str:
    if spark is None:
        return "none"
    if is_connect_session(spark):
        return f"connect:{spark.session_id}"
    return str(spark.sparkContext.applicationId)


__all__ = ["SIGNED_SCHEME", "FileAccess", "apply_session_settings", "current_session",
           "decisions", "hadoop_file_system", "is_remote", "mirror", "mirror_dir", "signed_path",
           "spark_writes_location"]
