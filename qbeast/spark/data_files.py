"""How Spark reaches a table's data files: in the table's local folder, or through the storage layer.

A table on the local disk is read and written by Spark where it lies, as always. A table on an
object store (``s3://``, ``gs://``, ``abfss://``) is reached through the engine's own storage
layer (:mod:`qbeast.storage.object_store`), because a plain ``pip install pyspark`` has no Hadoop
connector for those schemes:

* **writes** are staged in a local folder (``spark.qbeast.storage.mirrorDir``) by Spark's own
  parquet writer, exactly as for a local table, and each finished file is uploaded to the table
  (:class:`qbeast.spark.write.staging.StagedFiles`); the uploaded file becomes the local copy;
* **reads** hand Spark local copies of the files the planner chose (:func:`readable`), fetched
  once into the mirror (:class:`qbeast.storage.mirror.LocalMirror`): data files never change, so
  a copy stays right, and every later read of the file runs at local-disk speed.

Both need the driver and the executors to share one disk, which is true of ``local[*]``
sessions (the engine's default and the dbt adapter's embedded mode).

A session whose tasks run on other machines (a ``spark://``, ``yarn`` or ``k8s://`` master, or
Spark Connect) cannot use this disk:

* Spark's own parquet reader (SQL through the JVM read bridge, and the DataFrame API of a
  session that has the bridge) reads **by signed URL** (:func:`bridge_readable`,
  ``spark.qbeast.storage.bridgeFiles``): the planner signs a GET URL per file with the store's
  credentials and hands Spark a path of the bridge's ``qbeasthttp`` file system, which fetches
  byte ranges of it on the executors;
* otherwise reads, and every ``qbeast.write``, run in **Arrow tasks** (:func:`in_arrow_tasks`,
  :mod:`qbeast.spark.read.arrow_tasks`, :mod:`qbeast.spark.write.task_files`): each task opens
  or uploads its files through the storage layer, with the store settings the driver resolved.

Row-level changes, optimize and convert read the old files by signed URL
(:func:`spark_readable`); their new files are written in Arrow tasks or by tasks that upload
their rewrites (:class:`qbeast.spark.write.staging.TaskUploads`). A session without signed reads
(no bridge jar, ``bridgeFiles=copies``) is refused them with an error that says what works
instead (:func:`check_access`).

A session whose Hadoop has a file system for the scheme (a cluster with hadoop-aws,
gcs-connector or hadoop-azure on its class path: :func:`hadoop_file_system`) lets Spark's
parquet reader open the files through it instead (``bridgeFiles=hadoop``, what ``auto`` picks
on a cluster master; ``local[*]`` keeps its faster local copies): no copies, no signed URLs,
the executors use the session's ``fs.*`` settings. New files are still written through the storage layer (staged and uploaded, or
uploaded by Arrow tasks): each lands once under its final name, where Spark's own writer on
an object store would rename, which S3 does by copying. One log line per session and scheme
says which way a session reaches its tables and why.
"""
from __future__ import annotations

import base64
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.shipping import is_connect_session, tasks_leave_process
from qbeast.storage import SCHEMES, aws_config, scheme_of, set_session_settings, storage_for
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


def check_access(spark: Any, location: str) -> None:
    """Refuse an object-store table in a session whose tasks do not share the driver's disk;
    say once per session and scheme how its data files are reached."""
    if not is_remote(location):
        return
    scheme = scheme_of(location) or ""
    if spark is not None and is_connect_session(spark):
        from qbeast.spark.bridge import SIGNED_FS_CLASS, SIGNED_FS_KEY

        raise InvalidOptionError(
            f"{location}: row-level changes (delete, update, merge), optimize and convert of "
            "tables on an object store through Spark Connect need a server that reads their "
            "files by signed URL: `qbeast serve`, whose launch installs the bridge's file "
            f"system ({SIGNED_FS_KEY}={SIGNED_FS_CLASS}), and {settings.BRIDGE_FILES.key} "
            "not 'copies'. qbeast.write and the DataFrame API "
            "(QbeastTable.to_df / sample) work without: Arrow tasks on the server write and read "
            "the files through the storage layer (docs/cluster.md)",
            option="location", value=location,
        )
    master = spark.sparkContext.master if spark is not None else "local"
    if tasks_leave_process(master, None):
        raise InvalidOptionError(
            f"{location}: row-level changes (delete, update, merge), optimize and convert of "
            "tables on an object store read their files with Spark's parquet reader, which on "
            f"this master (master is {master!r}) cannot use local copies: executors elsewhere "
            "cannot see them. They need the files read through a Hadoop connector for "
            f"{scheme}:// on the driver's and executors' class paths, or by signed URL (the JVM "
            f"read bridge loaded: qbeast.register), and {settings.BRIDGE_FILES.key} not "
            "'copies'. "
            "qbeast.write writes the table in Arrow tasks, and the DataFrame API "
            "(QbeastTable.to_df / sample) reads it, without either (docs/cluster.md)",
            option="location", value=location,
        )
    if _first_time(spark, scheme):
        logger.info(
            "%s:// tables: data files go through the engine's storage layer (master %s, %s): new "
            "files are staged in %s and uploaded, reads open local copies kept there unless "
            "Hadoop reads them", scheme, master, _connector_note(spark, scheme), mirror_dir(spark),
        )


def in_arrow_tasks(spark: Any, location: str) -> bool:
    """Whether the data files of the table at ``location`` are read and written in Arrow tasks
    through the storage layer (rather than staged and copied on this disk): an object-store
    table in a session whose tasks may run on other machines (a cluster master, a Spark Connect
    server). Says so once per session and scheme."""
    if not is_remote(location) or spark is None:
        return False
    connect = is_connect_session(spark)
    master = "a Spark Connect server" if connect else spark.sparkContext.master
    if not connect and not tasks_leave_process(master, None):
        return False
    scheme = scheme_of(location) or ""
    if _first_time(spark, scheme):
        logger.info(
            "%s:// tables: writes (qbeast.write, optimize), the rewrites of row-level changes, "
            "and reads where the JVM read bridge cannot read signed URLs, run in tasks that open "
            "and upload the files through the engine's storage layer with the settings resolved "
            "on this driver (master %s, %s)", scheme, master,
            _connector_note(spark, scheme),
        )
    return True


def check_native_access(spark: Any, location: str) -> None:
    """Refuse, naming the table at ``location``, an operation that reads its old files with
    Spark's own parquet reader (row-level changes, optimize, convert) in a session that cannot
    hand them to it: an object-store table seen from tasks elsewhere (a cluster master, a Spark
    Connect server) read neither through Hadoop nor by signed URL (:func:`native_reads`).
    Called before anything is read or written."""
    if in_arrow_tasks(spark, location) and not native_reads(spark, location):
        check_access(spark, location)  # raises, naming what works


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


def readable(spark: Any, locations: Iterable[str], sizes: Sequence[int | None] | None = None) -> list[str]:
    """``locations`` as Spark opens them: local paths unchanged, object-store files as local
    copies (fetched now when not yet copied; ``sizes`` from the log check each copy)."""
    locations = list(locations)
    remote = [i for i, location in enumerate(locations) if is_remote(location)]
    if not remote:
        return locations
    check_access(spark, locations[remote[0]])
    out = list(locations)
    by_store: dict[str, list[int]] = {}
    for i in remote:
        by_store.setdefault(scheme_of(locations[i]) or "", []).append(i)
    local = mirror(spark)
    for indexes in by_store.values():
        storage = storage_for(locations[indexes[0]])
        files = [(locations[i], sizes[i] if sizes is not None else None) for i in indexes]
        for i, path in zip(indexes, local.fetch(storage, files)):
            out[i] = path
    return out


#: the URI scheme of the bridge's read-only Hadoop file system over signed URLs
#: (``io.dbtqbeast.bridge.SignedUrlFileSystem``; the path layout is that class's)
SIGNED_SCHEME = "qbeasthttp"


def bridge_files_mode(spark: Any, scheme: str | None = None) -> str:
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


def hadoop_path(spark: Any, location: str) -> str:
    """``location`` (an object-store file or folder) as this session's Hadoop file system for
    its scheme names it: the same bucket and key, under the scheme that file system serves
    (``s3://b/k`` is ``s3a://b/k`` where Hadoop has only hadoop-aws's s3a)."""
    scheme = scheme_of(location) or ""
    found = hadoop_file_system(spark, scheme)
    if found is None:
        raise InvalidOptionError(f"{location}: {_no_hadoop_reason(spark, scheme)}",
                                 option="location", value=location)
    return found[0] + location[len(scheme):]


def _no_hadoop_reason(spark: Any, scheme: str) -> str:
    if spark is not None and is_connect_session(spark):
        return (f"a Spark Connect client cannot use its server's Hadoop file systems for "
                f"{scheme}:// tables")
    candidates = " or ".join(f"{c}://" for c in _HADOOP_SCHEMES.get(scheme, (scheme,)))
    return f"this session's Hadoop has no file system for {candidates} (no connector loads)"


def _through_hadoop(spark: Any, locations: Sequence[str]) -> tuple[list[str], list[int]]:
    """``locations`` with the object-store files this session reads through Hadoop's file
    system for their scheme as Hadoop names them; the indexes of the others (left as they are).
    Says once per session and scheme that Hadoop reads them."""
    out = list(locations)
    rest: list[int] = []
    modes: dict[str, str] = {}
    for i, location in enumerate(locations):
        scheme = scheme_of(location) if is_remote(location) else None
        if scheme is None:
            rest.append(i)
            continue
        if scheme not in modes:
            modes[scheme] = bridge_files_mode(spark, scheme)
            if modes[scheme] == "hadoop":
                _announce_hadoop(spark, scheme)
        if modes[scheme] == "hadoop":
            out[i] = hadoop_path(spark, location)
        else:
            rest.append(i)
    return out, rest


def _announce_hadoop(spark: Any, scheme: str) -> None:
    if _first_time(spark, f"{scheme}+hadoop"):
        served, cls = hadoop_file_system(spark, scheme) or ("?", "?")
        master = spark.sparkContext.master  # a Connect client never reads through Hadoop
        logger.info(
            "%s:// tables: Spark's parquet reader opens their files as %s:// paths through "
            "Hadoop's %s (master %s; the executors use the session's fs.%s.* settings, not "
            "signed URLs or local copies); new files are written through the engine's storage "
            "layer", scheme, served, cls, master, served)


def reads_local_copies(spark: Any, location: str) -> bool:
    """Whether Spark's parquet reader in this session opens local copies of the files of the
    object-store table at ``location`` (``copies`` mode), so that a file this process uploads is
    worth keeping as its copy."""
    return is_remote(location) and bridge_files_mode(spark, scheme_of(location)) == "copies"


def native_reads(spark: Any, location: str) -> bool:
    """Whether Spark's own parquet reader in this session opens the files of the table at
    ``location`` wherever its tasks run: a local table; an object-store table whose scheme the
    session's Hadoop serves (``bridgeFiles`` auto or hadoop), or read by signed URL
    (:func:`signed_native_reads`). Otherwise a session whose tasks run elsewhere reads and
    changes such a table in Arrow tasks, or is refused (:func:`check_native_access`)."""
    if not is_remote(location):
        return True
    if spark is not None and bridge_files_mode(spark, scheme_of(location)) == "hadoop":
        return True
    return signed_native_reads(spark)


def signed_native_reads(spark: Any) -> bool:
    """Whether Spark's own parquet reader in this session opens object-store files by signed
    URL, in ``signed`` mode (:func:`bridge_files_mode`): a classic session whose JVM read bridge
    (and its file system) is loaded, or a Spark Connect session whose server has the bridge's
    file system installed (:func:`server_reads_signed_urls`; ``qbeast serve`` does). The
    DataFrame API then reads such tables natively, as SQL does, instead of in Arrow tasks."""
    if spark is None or bridge_files_mode(spark) != "signed":
        return False
    if is_connect_session(spark):
        return server_reads_signed_urls(spark)
    from qbeast.spark.bridge import bridge_active

    return bridge_active(spark)


def server_reads_signed_urls(spark: Any) -> bool:
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


def spark_readable(spark: Any, locations: Sequence[str],
                   sizes: Sequence[int | None] | None = None) -> list[str]:
    """``locations`` as Spark's own parquet reader opens them in this session (the engine's
    native scans: DataFrame reads, the scans of row-level changes, optimize and convert): local
    paths as they are; object-store files through the session's Hadoop file system for their
    scheme where it has one (:func:`hadoop_path`), else as local copies (:func:`readable`) or,
    where this session reads by signed URL (:func:`signed_native_reads`), as signed-URL paths.
    ``sizes`` (from the log; unknown ones are looked up) check the copies and size the signed
    reads. Each call signs anew: a caller that matches paths across scans keeps the first
    ones."""
    if sizes is None:
        sizes = [None] * len(locations)
    if signed_native_reads(spark):
        return bridge_readable(spark, locations, sizes)
    out, rest = _through_hadoop(spark, locations)
    return _with_copies(spark, out, locations, sizes, rest)


def _with_copies(spark: Any, out: list[str], locations: Sequence[str],
                 sizes: Sequence[int | None], indexes: Iterable[int]) -> list[str]:
    """``out`` with the object-store files among ``indexes`` of ``locations`` replaced by their
    local copies (:func:`readable`)."""
    remote = [i for i in indexes if is_remote(locations[i])]
    if remote:
        copies = readable(spark, [locations[i] for i in remote], [sizes[i] for i in remote])
        for i, path in zip(remote, copies):
            out[i] = path
    return out


def check_bridge_access(spark: Any, location: str) -> None:
    """Whether the JVM read bridge can read the object-store table at ``location`` in this
    session (it always can with signed URLs); says once how its files are opened."""
    if not is_remote(location):
        return
    scheme = scheme_of(location) or ""
    mode = bridge_files_mode(spark, scheme)
    if mode == "hadoop":
        _announce_hadoop(spark, scheme)
        return
    if mode == "copies":
        check_access(spark, location)
        return
    if _first_time(spark, f"{scheme}+signed"):
        logger.info(
            "%s:// tables in SQL: Spark's parquet reader opens their files by ranged GETs on URLs "
            "signed on this driver, valid %d s (executors need no Hadoop connector and no "
            "credentials; %s)", scheme, settings.SIGNED_URL_SECONDS.read(spark),
            _connector_note(spark, scheme))


def bridge_readable(spark: Any, locations: Sequence[str], sizes: Sequence[int | None]) -> list[str]:
    """``locations`` as the JVM read bridge hands them to Spark's parquet reader: local paths
    unchanged; object-store files through the session's Hadoop file system for their scheme
    (``hadoop`` mode), as local copies (:func:`readable`) or, in ``signed`` mode, as paths of
    the bridge's signed-URL file system that carry each file's size and URL."""
    out, rest = _through_hadoop(spark, locations)
    remote = [i for i in rest if is_remote(locations[i])]
    if not remote:
        return out
    if bridge_files_mode(spark) == "copies":
        return _with_copies(spark, out, locations, sizes, remote)
    check_bridge_access(spark, locations[remote[0]])
    seconds = settings.SIGNED_URL_SECONDS.read(spark)
    by_store: dict[str, list[int]] = {}
    for i in remote:
        by_store.setdefault(scheme_of(locations[i]) or "", []).append(i)
    for indexes in by_store.values():
        storage = storage_for(locations[indexes[0]])
        known = [size if size is not None else storage.stat(locations[i]).size
                 for i in indexes for size in (sizes[i],)]
        urls = storage.signed_urls([locations[i] for i in indexes], seconds)
        for i, size, url in zip(indexes, known, urls):
            out[i] = signed_path(url, size, locations[i].rsplit("/", 1)[-1])
    return out


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


def _connector_note(spark: Any, scheme: str) -> str:
    """Whether Hadoop has a file system for the scheme, and whether reads use it (log lines)."""
    if spark is None:
        return "no session"
    if is_connect_session(spark):
        return "the server's Hadoop connectors are not used"
    found = hadoop_file_system(spark, scheme)
    if found is None:
        return f"Hadoop has no {scheme} connector"
    if bridge_files_mode(spark, scheme) == "hadoop":
        return f"Spark's parquet reader opens them through Hadoop's {found[0]} connector ({found[1]})"
    return (f"Hadoop has a {found[0]} connector ({found[1]}), not used for reads: "
            f"{settings.BRIDGE_FILES.key}={settings.BRIDGE_FILES.read(spark)}")
