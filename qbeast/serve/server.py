"""``qbeast serve``: one Spark driver with the engine in it, shared through Spark Connect and the
Thrift JDBC/ODBC protocol.

Why a server in this Python process: the read bridge's planner is the engine's Python code, and
it can only run in the Python process that owns the driver. Spark's own Connect and Thrift
servers, started with ``spark-submit``, have no such process, so their clients fall back to the
Python data source (no pruning of columns or files) or cannot read Qbeast tables at all. Here the
driver is started by the engine (:func:`qbeast.spark.session.get_or_create_session`: bridge jar,
extensions, planner registered), Spark Connect runs as the driver's plugin and the Hive Thrift
server is started on its SQL context, so every client session's scans are planned by the engine
and read by Spark's native parquet reader. The sessions the servers open for their clients get
the bridge's rule on their first Qbeast relation (``QbeastSource`` in ``jvm/``).

The catalog is an :class:`~qbeast.spark.embedded_catalog.EmbeddedCatalog` folder (the dbt
project's ``catalog_dir``, ``.qbeast`` by default), held for the server's lifetime: while it
serves, dbt and notebooks reach its tables through it instead of opening the folder themselves.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from qbeast.core.sql import sql_string
from qbeast.errors import InvalidOptionError, QbeastError
from qbeast.spark.bridge import PROCEDURES_CATALOG_CLASS, PROCEDURES_CATALOG_KEY, jar_path
from qbeast.spark.embedded_catalog import EmbeddedCatalog
from qbeast.spark.session import ENGINE_DEFAULTS, overlay
from qbeast.spark.shipping import is_local_master

logger = logging.getLogger("qbeast.serve.server")

#: Spark's own default ports for the two protocols.
DEFAULT_CONNECT_PORT = 15002
DEFAULT_THRIFT_PORT = 10000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Hosts that mean "every interface": Spark then advertises the machine's own address.
WILDCARD_HOSTS = ("0.0.0.0", "::")
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
#: Where the driver's JVM finds the shared secret (never in Spark's configuration, which
#: clients can list); read by the bridge's ``SharedSecret``.
TOKEN_VARIABLE = "QBEAST_SERVE_TOKEN"
#: A shorter secret is refused: it could be guessed by a client allowed to try.
MIN_TOKEN_LENGTH = 16
TOKEN_INTERCEPTOR_CLASS = "io.dbtqbeast.bridge.TokenInterceptor"
TOKEN_AUTHENTICATION_CLASS = "io.dbtqbeast.bridge.TokenAuthentication"


class ServeError(QbeastError):
    """The server cannot start as asked (a port taken, the catalog held, a bad option)."""


@dataclass(frozen=True)
class ServeOptions:
    """What one ``qbeast serve`` serves, and where. A port of 0 turns its protocol off."""

    catalog: EmbeddedCatalog
    host: str = "127.0.0.1"
    connect_port: int = DEFAULT_CONNECT_PORT
    thrift_port: int = DEFAULT_THRIFT_PORT
    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)
    #: the shared secret every client must present; required when ``host`` is not loopback
    token: str | None = field(default=None, repr=False)

    def check(self) -> None:
        """Refuse options that cannot work, naming the option and the allowed values."""
        for option, port in (("--connect-port", self.connect_port),
                             ("--thrift-port", self.thrift_port)):
            if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
                raise InvalidOptionError(
                    f"{option} {port!r} is not a port; allowed values: 1-65535, or 0 to turn "
                    "the protocol off")
        if self.connect_port == 0 and self.thrift_port == 0:
            raise InvalidOptionError(
                "both --connect-port and --thrift-port are 0: nothing to serve; allowed values: "
                "a port for at least one of them")
        if self.connect_port and self.connect_port == self.thrift_port:
            raise InvalidOptionError(
                f"--connect-port and --thrift-port are both {self.connect_port}; allowed values: "
                "two different ports")
        if self.token is not None and len(self.token) < MIN_TOKEN_LENGTH:
            raise InvalidOptionError(
                f"the server token has {len(self.token)} characters; allowed values: a secret of "
                f"at least {MIN_TOKEN_LENGTH} characters (e.g. `openssl rand -hex 24`) in "
                f"--token-file or {TOKEN_VARIABLE}")
        if self.host not in LOOPBACK_HOSTS and self.token is None:
            raise InvalidOptionError(
                f"--host {self.host!r} lets other machines connect, and they must authenticate: "
                f"give the server a shared secret with --token-file FILE or the environment "
                f"variable {TOKEN_VARIABLE}; allowed values without one: "
                f"{', '.join(LOOPBACK_HOSTS)}")
        authenticated = self.spark_conf().get("spark.authenticate", "false").lower() == "true"
        if self.host not in LOOPBACK_HOSTS and not authenticated:
            raise InvalidOptionError(
                f"--host {self.host!r} with --master {self.master!r} leaves the driver's own RPC "
                "port open without authentication; allowed values: a local[...] master (the "
                "server then generates the RPC secret itself), or --conf spark.authenticate=true "
                "with the cluster's secret (spark.authenticate.secret.file), docs/security.md")

    @property
    def local_master(self) -> bool:
        """Whether the executors run inside the server's JVM (``local``, ``local[N]``...)."""
        return is_local_master(self.master)

    def spark_conf(self) -> dict[str, str]:
        """The driver's settings: the catalog folder, the two protocols, then the user's."""
        conf = self.catalog.spark_conf()
        conf["spark.driver.extraJavaOptions"] = " ".join(
            [ENGINE_DEFAULTS["spark.driver.extraJavaOptions"], *self.catalog.java_options()])
        jar = jar_path()
        if jar is not None:
            # on the driver's class path from its start: Spark Connect runs a client's command in
            # threads whose class loader does not see jars added later (spark.jars), and
            # `df.write.format("qbeast")` looks the source up there
            conf["spark.driver.extraClassPath"] = str(jar)
            # every client's session gets the catalog of the table operations (CALL)
            conf[PROCEDURES_CATALOG_KEY] = PROCEDURES_CATALOG_CLASS
        # Spark's own sockets (driver RPC, block manager) on the server's interface, not on the
        # machine's external address Spark picks by default; the web UI stays off (it would bind
        # to every interface). With a local master Spark generates the RPC secret itself at each
        # start (kept in the JVM's credentials, never in the settings clients can list):
        # a process without it is refused before any message reaches Spark's dispatcher.
        conf["spark.driver.bindAddress"] = self.host
        if self.host not in WILDCARD_HOSTS:
            conf["spark.driver.host"] = self.host
        conf["spark.ui.enabled"] = "false"
        if self.local_master:
            conf["spark.authenticate"] = "true"
        if self.connect_port:
            conf["spark.plugins"] = CONNECT_PLUGIN
            conf["spark.connect.grpc.binding.address"] = self.host
            conf["spark.connect.grpc.binding.port"] = str(self.connect_port)
        if self.thrift_port:
            conf["spark.hadoop.hive.server2.thrift.bind.host"] = self.host
            conf["spark.hadoop.hive.server2.thrift.port"] = str(self.thrift_port)
            conf["spark.hadoop.hive.server2.transport.mode"] = "binary"
        if self.token is not None:
            # the secret itself travels in the driver's environment (start), not in here
            if self.connect_port:
                conf["spark.connect.grpc.interceptor.classes"] = TOKEN_INTERCEPTOR_CLASS
            if self.thrift_port:
                conf["spark.hadoop.hive.server2.authentication"] = "CUSTOM"
                # Hive looks the class up in a HiveConf of its own, built from the JVM's
                # system properties, not in the session's configuration
                conf["spark.driver.extraJavaOptions"] += (
                    f" -Dhive.server2.custom.authentication.class={TOKEN_AUTHENTICATION_CLASS}")
        # the user's options come after the server's own (the catalog's Derby folder, the
        # token's authentication class, the bridge jar), never instead of them
        return overlay(conf, self.conf)

    def process_environment(self) -> dict[str, str]:
        """Variables the driver's JVM must start with: ``SPARK_LOCAL_IP`` is where Spark binds
        what its settings do not place (the web UI, if a ``--conf`` turns it on)."""
        return {} if self.host in WILDCARD_HOSTS else {"SPARK_LOCAL_IP": self.host}

    def endpoints(self) -> list[str]:
        """What the server offers, as clients write it (the token's place, never its value)."""
        out = []
        if self.connect_port:
            suffix = "/;x-qbeast-token=TOKEN" if self.token is not None else ""
            out.append(f"Spark Connect sc://{self.host}:{self.connect_port}{suffix}")
        if self.thrift_port:
            suffix = " (user any, password TOKEN)" if self.token is not None else ""
            out.append(
                f"Thrift JDBC/ODBC jdbc:hive2://{self.host}:{self.thrift_port}/default{suffix}")
        return out


def _check_port_free(host: str, port: int, option: str) -> None:
    """Fail before Spark starts when another process listens on ``port`` (Spark's own error
    would come after the driver's start-up, buried in its log)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ServeError(
                f"port {port} on {host} ({option}) is taken by another process ({exc.strerror}); "
                f"stop that process or choose another port with {option}") from None


@dataclass
class RunningServer:
    """A started server: its session (the driver) and the Thrift server object, if any."""

    options: ServeOptions
    session: Any
    thrift: Any | None
    started: float

    def stop(self) -> None:
        """Stop the Thrift server, then the driver (which stops Spark Connect with it)."""
        logger.info("qbeast serve: stopping (served %.0fs)", time.monotonic() - self.started)
        try:
            if self.thrift is not None:
                self.thrift.stop()
            self.session.stop()
        except Exception as exc:  # noqa: BLE001 - a driver that got the signal too is gone
            # Ctrl-C in a terminal reaches the whole process group: the JVM then stops itself
            # (Spark's shutdown hook stops the context), and there is nothing left to call
            logger.info("qbeast serve: the driver had already stopped (%s)", type(exc).__name__)
        logger.info("qbeast serve: stopped")


def start(options: ServeOptions, prepare: Callable[[Any], None] | None = None) -> RunningServer:
    """Start the driver and the servers of ``options``; refuses a taken port or catalog.
    ``prepare`` gets the driver's session before the servers listen (the CLI adds the SQL
    procedures there, which live above this layer)."""
    from qbeast.spark.session import get_or_create_session

    options.check()
    for option, port in (("--connect-port", options.connect_port),
                         ("--thrift-port", options.thrift_port)):
        if port:
            _check_port_free(options.host, port, option)
    catalog = options.catalog
    try:
        catalog.folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ServeError(f"the catalog folder {catalog.folder} cannot be created "
                         f"({exc.strerror}); choose another with --catalog-dir") from None
    holder = catalog.hold()
    if holder is not None:
        raise ServeError(catalog.busy_message(holder))
    began = time.monotonic()
    # the driver's JVM is a child of this process: it inherits these variables at its start
    os.environ.update(options.process_environment())
    if options.token is not None:
        os.environ[TOKEN_VARIABLE] = options.token
        logger.info("qbeast serve: clients must present the server's token")
    logger.info("qbeast serve: starting the driver (master %s, catalog %s)", options.master,
                catalog.folder)
    session = get_or_create_session(options.spark_conf(), master=options.master,
                                    app_name="qbeast-serve", hive=True)
    thrift = None
    try:
        jar = jar_path()
        if jar is not None:
            # the Thrift server runs its clients' statements with the session's shared class
            # loader, which only sees spark.jars through ADD JAR: without it an INSERT's target
            # (resolved through the V2 catalog) cannot find the `qbeast` source
            session.sql(f"ADD JAR {sql_string(str(jar))}")
        if prepare is not None:
            prepare(session)
        if options.thrift_port:
            server_class = getattr(session._jvm, THRIFT_SERVER_CLASS)
            thrift = server_class.startWithContext(session._jsparkSession.sqlContext())
    except BaseException:
        session.stop()
        raise
    for endpoint in options.endpoints():
        logger.info("qbeast serve: serving %s", endpoint)
    logger.info("qbeast serve: ready in %.1fs; warehouse %s", time.monotonic() - began,
                catalog.warehouse)
    return RunningServer(options, session, thrift, time.monotonic())


def serve(options: ServeOptions, stop: threading.Event,
          on_ready: Callable[[RunningServer], None] | None = None,
          prepare: Callable[[Any], None] | None = None) -> None:
    """Serve until ``stop`` is set (the CLI sets it on SIGTERM and Ctrl-C), then stop cleanly.
    ``on_ready`` runs once the servers listen (the CLI takes the signals back there: PySpark
    installs its own SIGINT handler when it starts a driver)."""
    server = start(options, prepare)
    try:
        if on_ready is not None:
            on_ready(server)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
