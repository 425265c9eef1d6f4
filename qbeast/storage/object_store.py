"""Object stores (S3 and S3-compatible servers, GCS, Azure) behind the :class:`Storage` interface.

Built on ``obstore``, the Python binding of the ``object_store`` crate that delta-rs uses, so the
requests, retries, credential chains and conditional puts are those of a library made for this.
The module knows bytes at paths only; nothing here is about Delta or Qbeast.

Paths are canonical URIs: the family's own scheme (``s3a://`` becomes ``s3://``), the bucket (for
Azure, ``container@account.dfs.core.windows.net``), then the ``/``-separated key. A table path is
therefore never mistaken for a local folder by code above the storage, and it is the location
every other reader (Spark with a connector, deltalake, DuckDB) names the object by.

``obstore`` is imported on first use, so that ``import qbeast.storage`` stays free of it for users
whose tables live on a local disk.
"""
from __future__ import annotations

import errno
import io
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qbeast.errors import InvalidOptionError, QbeastError
from qbeast.storage.base import FileStat, RangedReader, Storage
from qbeast.storage.errors import RETRY_OPTIONS, read_failure, retry_limits

if TYPE_CHECKING:
    from obstore import ObjectMeta
    from obstore.store import ObjectStore

logger = logging.getLogger(__name__)

#: location scheme -> the store family serving it (``s3a`` is Hadoop's name for the same objects)
SCHEMES: dict[str, str] = {"s3": "s3", "s3a": "s3", "gs": "gs", "abfss": "azure"}

#: the family's canonical scheme, used when a path is turned back into a URI
_FAMILY_SCHEME = {"s3": "s3", "gs": "gs", "azure": "abfss"}

#: environment variable and option that allow commits on a store without conditional writes
SINGLE_WRITER_ENV = "QBEAST_S3_SINGLE_WRITER"
SINGLE_WRITER_OPTION = "single_writer"

#: obstore HTTP-client settings, given as ``client_options`` rather than store configuration;
#: deltalake-style keys (``AWS_ALLOW_HTTP``) are accepted too, the prefix is dropped
_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "http2_only", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "timeout", "user_agent",
})
_KEY_PREFIXES = ("aws_", "google_", "azure_")

#: where an S3 endpoint may be set, in obstore's order of precedence (options, then environment)
_S3_ENDPOINT_KEYS = ("aws_endpoint_url_s3", "endpoint", "aws_endpoint", "aws_endpoint_url")
_S3_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")

#: attempts of a conditional put that S3 answers with 409 ConditionalRequestConflict (another
#: conditional write to the same key was in flight; AWS asks to retry, the retry then sees 412)
_CONFLICT_RETRIES = 5


@dataclass(frozen=True, slots=True)
class ObjectLocation:
    """A location split into store family, bucket (container) and key, from its URI."""

    family: str
    bucket: str
    key: str

    @property
    def root(self) -> str:
        """The bucket's canonical URI: ``s3://bucket``."""
        return f"{_FAMILY_SCHEME[self.family]}://{self.bucket}"

    @property
    def path(self) -> str:
        """The canonical URI used inside the storage: ``s3://bucket/key``."""
        return f"{self.root}/{self.key}" if self.key else self.root


def scheme_of(location: str) -> str | None:
    """The lower-cased URI scheme of a location, or None for a plain path."""
    head, sep, _ = location.partition("://")
    return head.lower() if sep and head and "/" not in head else None


def parse_location(location: str) -> ObjectLocation:
    """Split ``s3://``, ``s3a://``, ``gs://`` or ``abfss://`` locations; the one parser of them.

    ``s3a://b/k`` is the same object as ``s3://b/k``. Azure's authority
    ``container@account.dfs.core.windows.net`` is kept whole as the bucket component, because
    the account is part of where the object lives.
    """
    scheme = scheme_of(location)
    if scheme not in SCHEMES:
        raise InvalidOptionError(
            f"location {location!r} is not an object-store URI; supported schemes: "
            f"{', '.join(f'{s}://' for s in SCHEMES)}",
            option="location", value=location, allowed=[f"{s}://" for s in SCHEMES],
        )
    rest = location.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise InvalidOptionError(
            f"location {location!r} names no bucket; expected {scheme}://<bucket>/<path>",
            option="location", value=location, allowed=f"{scheme}://<bucket>/<path>",
        )
    family = SCHEMES[scheme]
    if family == "azure":
        _azure_account(bucket, location)  # validated here, used when the store is built
    key = key.strip("/")
    if "//" in key:
        raise InvalidOptionError(
            f"location {location!r} has an empty path segment ('//'); object keys here are "
            "'/'-separated names without empty parts",
            option="location", value=location, allowed="a key without '//'",
        )
    return ObjectLocation(family, bucket, key)


def _azure_account(authority: str, location: str) -> tuple[str, str]:
    """``container@account.dfs.core.windows.net`` -> (container, account)."""
    container, at, host = authority.partition("@")
    account = host.split(".", 1)[0]
    if not (at and container and account):
        raise InvalidOptionError(
            f"location {location!r}: expected abfss://<container>@<account>.dfs.core.windows.net/<path>",
            option="location", value=location,
            allowed="abfss://<container>@<account>.dfs.core.windows.net/<path>",
        )
    return container, account


#: S3 settings of the process's Spark session (its Hadoop ``fs.s3a.*`` settings, in obstore's
#: keys), set by the Spark layer (:func:`set_session_settings`)
_session_settings: dict[str, dict[str, str]] = {}

#: spellings of one S3 setting in options (lower-cased, ``aws_`` prefix dropped) -> obstore key
_S3_ALIASES = {"endpoint_url": "endpoint", "endpoint_url_s3": "endpoint", "default_region": "region",
               "token": "session_token", "access_key": "access_key_id", "secret_key": "secret_access_key"}


def set_session_settings(family: str, settings: Mapping[str, str]) -> None:
    """Settings a Spark session holds for a store family (for S3 its Hadoop ``fs.s3a.*``
    settings, see :func:`qbeast.storage.aws_config.from_hadoop`); used by stores built afterwards,
    below explicit options and the environment, above the shared AWS files."""
    _session_settings[family] = dict(settings)


def _s3_settings_beside_the_environment(options: Mapping[str, object]) -> dict[str, str]:
    """S3 settings from the session and the shared AWS files that neither ``options`` nor the
    environment give (credentials taken whole from one source)."""
    from qbeast.storage import aws_config

    session = _session_settings.get("s3", {})
    files = aws_config.shared_file_settings()
    if "access_key_id" in session:
        files = {k: v for k, v in files.items() if k not in ("access_key_id", "secret_access_key", "session_token")}
    lower = aws_config.below_environment({**files, **session})
    given = _s3_keys_given(options)
    return {k: v for k, v in lower.items() if k not in given}


def _s3_keys_given(options: Mapping[str, object]) -> set[str]:
    """The obstore S3 keys ``options`` set, whatever their spelling; any credential counts for
    all three (credentials are taken whole from one place)."""
    given = set()
    for key in options:
        bare = str(key).lower()
        bare = bare[4:] if bare.startswith("aws_") else bare
        given.add(_S3_ALIASES.get(bare, bare))
    if given & {"access_key_id", "secret_access_key", "session_token"}:
        given |= {"access_key_id", "secret_access_key", "session_token"}
    return given


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


#: requests made to object stores by this process, by kind (list, get, head, put, delete)
_REQUESTS: Counter[str] = Counter()
_REQUESTS_LOCK = threading.Lock()


def _count(kind: str) -> None:
    with _REQUESTS_LOCK:
        _REQUESTS[kind] += 1


def _request(kind: str) -> Any:
    """The ``obstore`` module, after counting one request of ``kind``."""
    _count(kind)
    return _obstore()


def _listing(store: ObjectStore, prefix: str | None, offset: str | None = None) -> Iterator[ObjectMeta]:
    """Every object under ``prefix`` (after ``offset``), fetched lazily a page at a time; each
    page counted as one list request (S3 answers 1,000 keys per request)."""
    _count("list")
    for page, chunk in enumerate(_obstore().list(store, prefix, offset=offset, chunk_size=1000)):
        if page:
            _count("list")
        yield from chunk


def request_counts() -> dict[str, int]:
    """Requests this process made to object stores so far, by kind; subtract two of these to
    get what an operation cost (:class:`qbeast.progress.Phase` logs it at debug level)."""
    with _REQUESTS_LOCK:
        return dict(_REQUESTS)


def _obstore() -> Any:
    """The ``obstore`` module, imported on first use (see the module docstring)."""
    import obstore

    return obstore


#: a 404 whose code says the bucket (Azure: container) is missing, not the object
MISSING_CONTAINER_CODES = frozenset({"NoSuchBucket", "ContainerNotFound"})


class ObjectStoreError(QbeastError, OSError):
    """A store did not answer a request (unreachable endpoint, missing or refused credentials, a
    bucket that does not exist, throttling past the retry limits): the message's first line
    starts with the store's code (``code``), names the operation and the location, and says what
    to change (:mod:`qbeast.storage.errors`), instead of the client library's trace."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@contextmanager
def _answered(location: str, what: str) -> Iterator[None]:
    """Turn the store's failures into :class:`ObjectStoreError` naming ``location``; a missing
    object stays ``FileNotFoundError`` (the interface's answer), a missing bucket does not."""
    from obstore.exceptions import BaseError, NotFoundError

    try:
        yield
    except (NotFoundError, FileNotFoundError) as exc:  # obstore raises the builtin for a 404
        if isinstance(exc, FileNotFoundError) and exc.strerror is not None \
                and exc.errno == errno.ENOENT:  # one of ours, already said
            raise
        failure = read_failure(str(exc))
        if failure.code in MISSING_CONTAINER_CODES:  # not the object: its bucket is missing
            raise ObjectStoreError(failure.line(what, location), failure.code) from None
        raise FileNotFoundError(errno.ENOENT, failure.line(what, location), location) from None
    except BaseError as exc:
        failure = read_failure(str(exc))
        raise ObjectStoreError(failure.line(what, location), failure.code) from exc


def _missing(exc: FileNotFoundError, path: str) -> FileNotFoundError:
    """The interface's answer for a missing object at ``path``, keeping the store's line."""
    return FileNotFoundError(errno.ENOENT, exc.strerror or f"NoSuchKey: no object at {path}", path)


class ObjectStorage(Storage):
    """One object-store family (S3, GCS or Azure), every bucket of it, through ``obstore``.

    **Locations**: ``s3://bucket/key`` and ``s3a://bucket/key`` (same object), ``gs://bucket/key``,
    ``abfss://container@account.dfs.core.windows.net/key``.

    **Credentials and endpoint** come from the places obstore reads when a store is built: for S3
    the AWS environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``), the
    container and instance metadata services and web identity; for GCS ``GOOGLE_*`` variables and
    application default credentials; for Azure ``AZURE_*`` variables. ``options`` override them
    and take obstore's configuration keys (``endpoint``, ``access_key_id``, ``region``, ...), also
    in deltalake's spelling (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``). An ``http://`` endpoint
    turns on ``allow_http`` by itself: an S3-compatible server on a local network is the only
    reason to name one.

    **Put-if-absent** is the store's conditional write (S3 and Azure ``If-None-Match: *``, GCS
    ``ifGenerationMatch=0``): the store, not this process, decides which of several writers
    creates a commit. A store that refuses conditional writes (some S3-compatible servers answer
    501 Not Implemented) is refused for commits with :class:`InvalidOptionError`, unless the
    option ``single_writer=true`` or the environment variable ``QBEAST_S3_SINGLE_WRITER=true``
    says only one writer ever commits to its tables; then put-if-absent falls back to a check
    followed by a put, and a warning says so once per bucket. A server that silently ignores the
    header cannot be told apart from one that honours it; do not share such a store between
    writers.
    """

    def __init__(self, family: str, options: Mapping[str, object] | None = None) -> None:
        if family not in _FAMILY_SCHEME:
            raise InvalidOptionError(
                f"object store family {family!r} is not supported; expected one of "
                f"{sorted(_FAMILY_SCHEME)}", option="family", value=family, allowed=sorted(_FAMILY_SCHEME),
            )
        self.family = family
        options = dict(options or {})
        single = options.pop(SINGLE_WRITER_OPTION, None)
        single = options.pop(SINGLE_WRITER_ENV.lower(), single)
        single = options.pop(SINGLE_WRITER_ENV, single)
        self.single_writer = _truthy(single if single is not None else os.environ.get(SINGLE_WRITER_ENV, ""))
        self._retry = retry_limits(options)
        for key in RETRY_OPTIONS:
            options.pop(key, None)
        if family == "s3":
            options = {**_s3_settings_beside_the_environment(options), **options}
        self._config, self._client = self._split_options(options)
        self._stores: dict[str, ObjectStore] = {}
        self._no_conditional: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ construction

    def _split_options(self, options: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
        """Store configuration and HTTP-client options, keys lower-cased as obstore wants them."""
        config: dict[str, object] = {}
        client: dict[str, object] = {}
        for raw_key, value in options.items():
            key = str(raw_key).lower()
            bare = next((key[len(p):] for p in _KEY_PREFIXES if key.startswith(p)), key)
            if bare in _CLIENT_KEYS:
                client[bare] = value
            else:
                config[key] = value
        if self.family == "s3" and "allow_http" not in client:
            endpoint = next((str(config[k]) for k in _S3_ENDPOINT_KEYS if k in config), None)
            endpoint = endpoint or next((os.environ[v] for v in _S3_ENDPOINT_ENV if os.environ.get(v)), None)
            if endpoint and endpoint.lower().startswith("http://"):
                client["allow_http"] = True
        return config, client

    def _store(self, bucket: str) -> ObjectStore:
        with self._lock:
            store = self._stores.get(bucket)
            if store is None:
                store = self._stores[bucket] = self._build(bucket)
            return store

    def _build(self, bucket: str) -> ObjectStore:
        from obstore.exceptions import UnknownConfigurationKeyError
        from obstore.store import AzureStore, GCSStore, S3Store

        from datetime import timedelta

        retries, seconds = self._retry
        kwargs: dict[str, Any] = {
            "config": self._config or None, "client_options": self._client or None,
            "retry_config": {"max_retries": retries, "retry_timeout": timedelta(seconds=seconds)}}
        try:
            if self.family == "s3":
                return S3Store(bucket, **kwargs)
            if self.family == "gs":
                return GCSStore(bucket, **kwargs)
            container, account = _azure_account(bucket, f"abfss://{bucket}")
            return AzureStore(container, **kwargs, account_name=account)
        except UnknownConfigurationKeyError as exc:
            raise InvalidOptionError(f"storage option not known to the {self.family} store: {exc}",
                                     option="storage_options") from exc

    def for_tasks(self) -> ObjectStorage:
        """A copy that opens the same stores in a process without this one's environment (a
        Spark executor on another machine): for S3, the ``AWS_*`` variables obstore reads here are
        folded into its settings, below the explicit options as they are here. GCS and Azure
        stores take their environment where they run."""
        copy = ObjectStorage.__new__(ObjectStorage)
        copy.__setstate__(self.__getstate__())
        if self.family == "s3":
            from qbeast.storage import aws_config

            given = _s3_keys_given(self._config)
            from_env = {k: v for k, v in aws_config.environment_settings().items() if k not in given}
            copy._config = {**from_env, **self._config}
        return copy

    def __getstate__(self) -> dict[str, object]:
        # stores and the lock are rebuilt on the other side (a Spark task, a worker process)
        return {"family": self.family, "single_writer": self.single_writer,
                "_config": self._config, "_client": self._client, "_retry": self._retry}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stores, self._no_conditional, self._lock = {}, set(), threading.Lock()

    # ------------------------------------------------------------------ paths

    def resolve(self, location: str) -> str:
        if not isinstance(location, str) or not location:
            raise InvalidOptionError(f"object-store location must be a non-empty string, got {location!r}",
                                     option="location", value=location)
        return self._parsed(location).path

    def uri(self, path: str) -> str:
        """The URI of a path of this storage: the path itself, in its canonical form."""
        return self.resolve(path)

    def _split(self, path: str) -> tuple[ObjectStore, str]:
        parsed = self._parsed(path)
        return self._store(parsed.bucket), parsed.key

    def _parsed(self, path: str) -> ObjectLocation:
        parsed = parse_location(path)
        if parsed.family != self.family:
            raise InvalidOptionError(
                f"location {path!r} belongs to the {parsed.family} store, not {self.family}",
                option="location", value=path,
            )
        return parsed

    def _bucket_path(self, path: str) -> str:
        return self._parsed(path).root

    def _stat_of(self, bucket_path: str, meta: ObjectMeta) -> FileStat:
        mtime_ms = int(meta["last_modified"].timestamp() * 1000)
        return FileStat(meta["size"], mtime_ms, f"{bucket_path}/{meta['path']}", False)

    # ------------------------------------------------------------------ reads

    def read_bytes(self, path: str) -> bytes:
        store, key = self._split(path)
        try:
            with _answered(self.uri(path), "reading"):
                return bytes(_request("get").get(store, key).bytes())
        except FileNotFoundError as exc:
            raise _missing(exc, path) from None

    def read_range(self, path: str, start: int, length: int) -> bytes:
        store, key = self._split(path)
        if length <= 0:
            return b""
        try:
            with _answered(self.uri(path), "reading"):
                return bytes(_request("get").get_range(store, key, start=start, length=length))
        except FileNotFoundError as exc:
            raise _missing(exc, path) from None
        except ObjectStoreError:
            # a range past the end is refused by some stores: read what is there
            size = self.stat(path).size
            if start >= size:
                return b""
            with _answered(self.uri(path), "reading"):
                return bytes(_request("get").get_range(store, key, start=start, end=min(size, start + length)))

    def signed_urls(self, paths: Sequence[str], seconds: int) -> list[str]:
        """Presigned GET URLs (S3 SigV4 query signing, GCS V4 signing, Azure SAS), signed here
        with this store's credentials: no request for S3 and GCS keys. A URL expires after
        ``seconds`` or when the credentials that signed it do (a session token's end)."""
        from datetime import timedelta

        obstore = _obstore()
        out: dict[int, str] = {}
        by_bucket: dict[str, list[int]] = {}
        parsed = [self._parsed(path) for path in paths]
        for i, location in enumerate(parsed):
            by_bucket.setdefault(location.bucket, []).append(i)
        for bucket, indexes in by_bucket.items():
            keys = [parsed[i].key for i in indexes]
            with _answered(f"{_FAMILY_SCHEME[self.family]}://{bucket}", "signing URLs for"):
                urls = obstore.sign(self._store(bucket), "GET", keys, timedelta(seconds=seconds))
            out.update(zip(indexes, urls))
        return [out[i] for i in range(len(parsed))]

    #: Files at least this large are read by ranges in :meth:`open_input` (a footer and the
    #: column chunks a reader needs); smaller ones in one request, which costs less time than
    #: the several requests of a ranged read.
    RANGED_READ_BYTES = 8 * 1024 * 1024

    def open_input(self, path: str, size: int | None = None) -> io.RawIOBase | io.BufferedIOBase:
        if size is not None and size >= self.RANGED_READ_BYTES:
            return RangedReader(self, path, size)
        return io.BytesIO(self.read_bytes(path))

    def download(self, path: str, local_file: str) -> int:
        """Stream the object into ``local_file`` chunk by chunk (never whole in memory)."""
        store, key = self._split(path)
        tmp = f"{local_file}.{uuid.uuid4().hex}.part"
        size = 0
        try:
            with _answered(self.uri(path), "reading"), open(tmp, "wb") as handle:
                for chunk in _request("get").get(store, key):
                    handle.write(chunk)
                    size += len(chunk)
            os.replace(tmp, local_file)
        except FileNotFoundError as exc:
            raise _missing(exc, path) from None
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
        return size

    def upload(self, local_file: str, path: str) -> FileStat:
        """One PUT, or a multipart upload for a large file (obstore decides). The stat returned
        has the local file's size and the time the upload finished (no HEAD request: a Delta
        ``modificationTime`` is the writer's clock, and vacuum reads the store's own times)."""
        store, key = self._split(path)
        size = os.path.getsize(local_file)
        with _answered(self.uri(path), "writing"):
            _request("put").put(store, key, Path(local_file))
        return FileStat(size, int(time.time() * 1000), self.resolve(path), False)

    def list_dir(self, path: str) -> list[FileStat]:
        store, key = self._split(path)
        root = self._bucket_path(path)
        with _answered(self.uri(path), "listing"):
            listing = _request("list").list_with_delimiter(store, key or None)
        out = [FileStat(0, 0, f"{root}/{prefix}", True) for prefix in listing["common_prefixes"]]
        out += [self._stat_of(root, meta) for meta in listing["objects"]]
        return out

    def list_names_after(self, path: str, start_after: str) -> list[str]:
        store, key = self._split(path)
        prefix = f"{key}/" if key else ""
        names: set[str] = set()
        with _answered(self.uri(path), "listing"):
            for meta in _listing(store, prefix or None, offset=prefix + start_after):
                # a direct child, or the subfolder holding a deeper key (as ``list_names``)
                name = meta["path"][len(prefix):].split("/", 1)[0]
                # the offset is a request, not a promise: some servers (fake-gcs-server, GCS
                # emulators) ignore ``start-after`` and list from the start
                if name > start_after:
                    names.add(name)
        return sorted(names)

    def walk(self, path: str) -> Iterator[FileStat]:
        store, key = self._split(path)
        root = self._bucket_path(path)
        with _answered(self.uri(path), "listing"):  # the listing stays lazy, page by page
            for meta in _listing(store, key or None):
                yield self._stat_of(root, meta)

    def stat(self, path: str) -> FileStat:
        store, key = self._split(path)
        if key:
            try:
                with _answered(self.uri(path), "reading"):
                    return self._stat_of(self._bucket_path(path), _request("head").head(store, key))
            except FileNotFoundError:
                pass
        with _answered(self.uri(path), "listing"):
            has_children = self._has_children(store, key)
        if has_children:
            return FileStat(0, 0, path.rstrip("/"), True)
        raise FileNotFoundError(path)

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
        except FileNotFoundError:
            return False
        return True

    @staticmethod
    def _has_children(store: ObjectStore, key: str) -> bool:
        """Whether a "directory" exists: object stores have none, only keys under a prefix."""
        for chunk in _request("list").list(store, key or None, chunk_size=1):
            if chunk:
                return True
        return False

    # ------------------------------------------------------------------ writes

    def write_bytes(self, path: str, data: bytes) -> None:
        store, key = self._split(path)
        with _answered(self.uri(path), "writing"):
            _request("put").put(store, key, data)  # one PUT (or a multipart upload): atomic on object stores

    def delete(self, path: str) -> None:
        store, key = self._split(path)
        try:
            with _answered(self.uri(path), "deleting"):
                _request("delete").delete(store, key)
        except FileNotFoundError:
            pass

    def put_if_absent(self, path: str, data: bytes) -> bool:
        with _answered(self.uri(path), "writing"):
            return self._put_if_absent(path, data)

    def _put_if_absent(self, path: str, data: bytes) -> bool:
        store, key = self._split(path)
        bucket = self._bucket_path(path)
        if bucket in self._no_conditional:
            return self._check_then_put(store, key, data)
        from obstore.exceptions import AlreadyExistsError, GenericError, NotSupportedError, PreconditionError

        for attempt in range(_CONFLICT_RETRIES):
            try:
                _request("put").put(store, key, data, mode="create")
                return True
            except (AlreadyExistsError, PreconditionError):
                return False
            except (NotImplementedError, NotSupportedError) as exc:
                return self._without_conditional_put(bucket, store, key, data, exc)
            except GenericError as exc:
                text = str(exc)
                if "ConditionalRequestConflict" in text and attempt + 1 < _CONFLICT_RETRIES:
                    time.sleep(0.05 * 2**attempt)
                    continue
                if "501" in text or "NotImplemented" in text:
                    return self._without_conditional_put(bucket, store, key, data, exc)
                raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _without_conditional_put(self, bucket: str, store: ObjectStore, key: str, data: bytes,
                                 cause: Exception) -> bool:
        """A store that refused ``If-None-Match``: refused for commits unless single-writer."""
        if not self.single_writer:
            raise InvalidOptionError(
                f"the object store of {self.uri(bucket)} refuses conditional writes "
                f"(put-if-absent), so concurrent commits could overwrite each other; if only one "
                f"writer ever commits to its tables, set the storage option "
                f"{SINGLE_WRITER_OPTION}=true or the environment variable {SINGLE_WRITER_ENV}=true",
                option=SINGLE_WRITER_OPTION, value=False, allowed=[True],
            ) from cause
        with self._lock:
            first = bucket not in self._no_conditional
            self._no_conditional.add(bucket)
        if first:
            logger.warning(
                "object store of %s refuses conditional writes; %s is set, so commits use a check "
                "followed by a put, safe only while a single writer commits", self.uri(bucket),
                SINGLE_WRITER_ENV,
            )
        return self._check_then_put(store, key, data)

    @staticmethod
    def _check_then_put(store: ObjectStore, key: str, data: bytes) -> bool:
        try:
            _request("head").head(store, key)
            return False
        except FileNotFoundError:
            _request("put").put(store, key, data)
            return True
