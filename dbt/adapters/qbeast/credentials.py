"""Profile fields of a ``type: qbeast`` target.

The adapter runs the qbeast engine inside the dbt process, on a Spark session. ``session`` (the
default: a local driver in the dbt process, or a cluster / Spark Connect session configured
through ``server_side_parameters``) makes a profile with just ``type: qbeast`` and ``schema:``
complete. ``connect`` with ``host: sc://HOST:PORT`` is the same engine on a Spark Connect session,
typically of ``qbeast serve`` (docs/serve.md): the server's catalog, its driver planning the
reads; ``token`` is the server's shared secret when it has one. ``thrift`` (``host``, ``port``,
``user``, and ``password`` / ``auth`` where the server asks for them, as dbt-spark's thrift
method) is a SQL connection to ``qbeast serve``, whose driver runs the engine: the adapter's
engine calls become SQL statements (:mod:`engines`). dbt-spark's other methods (http, odbc)
reach servers without the qbeast engine, so they are rejected with an error that says what to
use.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple
from urllib.parse import quote

from dbt.adapters.spark.connections import SparkCredentials

from qbeast import EmbeddedCatalog

from dbt.adapters.qbeast.errors import QbeastProfileError

SESSION_METHOD = "session"
CONNECT_METHOD = "connect"
THRIFT_METHOD = "thrift"
ALLOWED_METHODS: Tuple[str, ...] = (SESSION_METHOD, CONNECT_METHOD, THRIFT_METHOD)
REMOTE_KEY = "spark.remote"
#: the header carrying the shared secret of a `qbeast serve` bound off loopback
TOKEN_HEADER = "x-qbeast-token"
DEFAULT_CATALOG_DIR = EmbeddedCatalog.DEFAULT_FOLDER


@dataclass
class QbeastCredentials(SparkCredentials):
    """dbt-spark's credentials with in-process defaults.

    ``catalog_dir`` holds the embedded Hive metastore (Derby) and the Spark warehouse. A relative
    path is taken relative to the dbt project folder, never the working directory, so ``dbt run``
    started from anywhere sees the same tables.
    """

    method: str = SESSION_METHOD  # type: ignore[assignment]
    host: Optional[str] = "localhost"
    catalog_dir: str = DEFAULT_CATALOG_DIR

    def __post_init__(self) -> None:
        method = str(self.method) if self.method is not None else ""
        if method not in ALLOWED_METHODS:
            raise QbeastProfileError(
                f"unsupported `method: {self.method}` in the qbeast profile; allowed values: "
                f"{', '.join(ALLOWED_METHODS)} (the qbeast engine runs inside the dbt process, "
                "or in `qbeast serve`: `method: connect` with `host: sc://HOST:PORT` reaches its "
                "Spark Connect port, `method: thrift` with host, port and user its Thrift port; "
                "`server_side_parameters` can point a session at a cluster with spark.master)"
            )
        self.method = method
        if method == CONNECT_METHOD:
            self._connect_url()
        if method == THRIFT_METHOD:
            self._thrift_fields()
        if not str(self.catalog_dir or "").strip():
            raise QbeastProfileError(
                "`catalog_dir` in the qbeast profile is empty; allowed values: a folder path "
                f"(relative to the dbt project folder), default {DEFAULT_CATALOG_DIR!r}"
            )
        super().__post_init__()

    def _connect_url(self) -> None:
        """``method: connect``: ``host`` is the server's ``sc://`` URL, handed to the session as
        ``spark.remote`` (one place only: a different ``spark.remote`` is refused)."""
        url = str(self.host or "").strip()
        if not url.startswith("sc://") or len(url) <= len("sc://"):
            raise QbeastProfileError(
                f"`method: connect` needs `host:` set to a Spark Connect URL; got {self.host!r}; "
                "allowed values: sc://HOST:PORT, e.g. sc://127.0.0.1:15002 for `qbeast serve`")
        remote = url
        if self.token:
            # the header a `qbeast serve` with a token checks (docs/serve.md): PySpark sends a
            # URL's `;name=value` parameters as headers; its own `;token=` demands TLS
            separator = ";" if "/;" in url else "/;"
            remote = f"{url.rstrip('/') if separator == '/;' else url}{separator}" \
                     f"{TOKEN_HEADER}={quote(str(self.token), safe='')}"
        parameters = dict(self.server_side_parameters or {})
        other = parameters.get(REMOTE_KEY)
        if other is not None and str(other) not in (url, remote):
            raise QbeastProfileError(
                f"`method: connect` with `host: {url}` and server_side_parameters "
                f"{REMOTE_KEY}={other!r} disagree; allowed values: the URL in `host` only")
        parameters[REMOTE_KEY] = remote
        self.server_side_parameters = parameters

    def _thrift_fields(self) -> None:
        """``method: thrift``: the server's host name or address (no URL) and Thrift port."""
        host = str(self.host or "").strip()
        if not host or "://" in host:
            raise QbeastProfileError(
                f"`method: thrift` needs `host:` set to the host of `qbeast serve`; got {self.host!r}; "
                "allowed values: a host name or address, e.g. 127.0.0.1 (with `port: 10000`)")
        if self.port is None or isinstance(self.port, bool) or not 0 < int(self.port) < 65536:
            raise QbeastProfileError(
                f"`method: thrift` needs `port:` set to the server's Thrift port; got {self.port!r}; "
                "allowed values: 1-65535 (`qbeast serve` listens on 10000 unless --thrift-port)")
        if self.token:
            # a `qbeast serve` with a token checks it as the password of Hive's CUSTOM
            # authentication: the same `token:` field as for `method: connect`
            if self.password and self.password != self.token:
                raise QbeastProfileError(
                    "`method: thrift` with both `token:` and a different `password:`; allowed "
                    "values: one of them (the token of `qbeast serve` is sent as the password)")
            self.password = self.token
            self.auth = self.auth or "CUSTOM"

    @property
    def type(self) -> str:
        return "qbeast"

    @property
    def unique_field(self) -> str:
        return f"{self.method}:{self.schema}"

    def _connection_keys(self) -> Tuple[str, ...]:
        if self.method == CONNECT_METHOD:
            return ("method", "host", "schema")
        if self.method == THRIFT_METHOD:
            return ("method", "host", "port", "user", "auth", "schema")
        return ("method", "schema", "catalog_dir", "server_side_parameters")

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        # A profile may say `method: session` explicitly or leave it out; both mean session.
        if data.get("method") is None:
            data["method"] = SESSION_METHOD
        return data
