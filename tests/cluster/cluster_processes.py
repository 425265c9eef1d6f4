"""Starting and stopping real Spark servers on loopback for the cluster tests.

Everything is launched from the pyspark installation of this virtualenv (``bin/spark-class`` and
``bin/spark-submit``), each server as its own process group with its logs, work and configuration
folders under one temporary directory, so that a test run leaves nothing behind and a failure can
print the server's own log. Every wait is bounded; every process started here is stopped by its
process group id (never by name).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOOPBACK = "127.0.0.1"
#: Bound for a server to come up; generous because the machine's 2 cores are shared.
STARTUP_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 30.0
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class PortUnavailable(RuntimeError):
    """No TCP port can be opened on the loopback interface (the tests are skipped then)."""


class ServerFailed(RuntimeError):
    """A server exited or did not become ready in time; the message carries its log's tail."""


class ServerExited(ServerFailed):
    """A server process ended before it was ready (a port taken by another process, say)."""


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((LOOPBACK, 0))
            return int(sock.getsockname()[1])
    except OSError as exc:
        raise PortUnavailable(f"cannot open a TCP port on {LOOPBACK}: {exc}") from exc


def port_accepts(port: int, host: str = LOOPBACK) -> bool:
    """True when something listens on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass
class SparkProcess:
    """One server process (its own session/process group) and the file its output goes to."""

    name: str
    command: list[str]
    log_path: Path
    env: Mapping[str, str]
    cwd: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> "SparkProcess":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=dict(self.env), cwd=self.cwd, start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def wait_until(self, ready: Callable[[], bool], what: str, timeout: float = STARTUP_TIMEOUT_S) -> float:
        """Poll ``ready`` until true; fail early if the process dies. Returns the seconds waited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if not self.alive():
                code = self.process.returncode if self.process else None
                raise ServerExited(f"{self.name} exited (code {code}) before {what}:\n{self.log_tail()}")
            if ready():
                return time.monotonic() - started
            time.sleep(0.5)
        raise ServerFailed(f"{self.name}: no {what} after {timeout:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL if it has not gone after a bounded wait."""
        if self.process is None or self.process.poll() is not None:
            return
        group = self.process.pid  # start_new_session: the group id is the leader's pid
        try:
            os.killpg(group, signal.SIGTERM)
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except ProcessLookupError:
            pass


def spark_environment(base_dir: Path, python: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of every server: loopback only, folders under ``base_dir``, small daemons."""
    conf_dir = base_dir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    # no AWS settings either: executors on other machines have none of the driver's, and tests
    # of object-store reads on the cluster show that what tasks need travels with them
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "AWS_"))}
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_CONF_DIR": str(conf_dir),  # keep any machine-wide spark-defaults out
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOCAL_HOSTNAME": LOOPBACK,
        "SPARK_LOG_DIR": str(base_dir / "logs"),
        "SPARK_PID_DIR": str(base_dir / "pids"),
        "SPARK_DAEMON_MEMORY": "512m",
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    })
    env.update(extra or {})
    return env


def master_status(ui_port: int) -> dict:
    """The standalone master's JSON status page (workers, applications)."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{ui_port}/json/", timeout=5) as response:
        return json.loads(response.read().decode())


def alive_workers(ui_port: int) -> int:
    try:
        status = master_status(ui_port)
    except OSError:
        return 0
    return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")


@dataclass
class StandaloneCluster:
    """A master and one worker; ``url`` is what drivers pass as ``spark.master``."""

    master: SparkProcess
    worker: SparkProcess
    port: int
    ui_port: int
    work_dir: Path

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        self.worker.stop()
        self.master.stop()


#: Attempts at starting the standalone cluster, each on fresh ports (see below).
CLUSTER_START_ATTEMPTS = 3


def start_standalone_cluster(base_dir: Path, python: str, cores: int = 2, memory: str = "2g") -> StandaloneCluster:
    """Master + one worker with ``cores`` cores, ready to accept applications (or raise).

    The ports are picked free a moment before the daemons bind them, so another process on the
    machine (a Spark driver's UI or RPC port, say) can take one in between. The daemons are told
    not to move to the next port then (Spark's default), which once left the test asking a
    stranger's UI for the master's status: the master exits instead, and the cluster is started
    again on fresh ports. A daemon that does not get ready in time is not retried.
    """
    for _ in range(CLUSTER_START_ATTEMPTS - 1):
        try:
            return _start_standalone_cluster(base_dir, python, cores, memory)
        except ServerExited:
            pass
    return _start_standalone_cluster(base_dir, python, cores, memory)


def _start_standalone_cluster(base_dir: Path, python: str, cores: int, memory: str) -> StandaloneCluster:
    port, ui_port, worker_ui = free_loopback_port(), free_loopback_port(), free_loopback_port()
    work_dir = base_dir / "worker-work"
    work_dir.mkdir(parents=True, exist_ok=True)
    env = spark_environment(base_dir, python, {
        # The REST submission server would take another port; applications come from drivers.
        # A taken port fails the daemon instead of moving it to a port the test does not ask.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false -Dspark.port.maxRetries=0",
        "SPARK_WORKER_OPTS": "-Dspark.port.maxRetries=0",
        "SPARK_WORKER_DIR": str(work_dir),
    })
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = SparkProcess(
        "standalone master",
        [spark_class, "org.apache.spark.deploy.master.Master",
         "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port)],
        base_dir / "logs" / "master.out", env, base_dir,
    ).start()
    worker = SparkProcess(
        "standalone worker",
        [spark_class, "org.apache.spark.deploy.worker.Worker",
         "--host", LOOPBACK, "--cores", str(cores), "--memory", memory,
         "--work-dir", str(work_dir), "--webui-port", str(worker_ui), f"spark://{LOOPBACK}:{port}"],
        base_dir / "logs" / "worker.out", env, base_dir,
    )
    cluster = StandaloneCluster(master, worker, port, ui_port, work_dir)
    try:
        master.wait_until(lambda: port_accepts(port) and port_accepts(ui_port), "listening master")
        worker.start()
        worker.wait_until(lambda: alive_workers(ui_port) >= 1, "worker registered with the master")
    except BaseException:
        cluster.stop()
        raise
    return cluster


@dataclass
class ConnectServer:
    """A Spark Connect server (its own local driver); ``url`` is what clients pass as ``spark.remote``."""

    process: SparkProcess
    port: int
    warehouse: Path

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        self.process.stop()


def start_connect_server(base_dir: Path, python: str, master: str = "local[2]") -> ConnectServer:
    """A Spark Connect server with the engine's settings, listening on loopback (or raise)."""
    port = free_loopback_port()
    warehouse = base_dir / "warehouse"
    settings = {
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dderby.system.home={base_dir}",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
    }
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS,
               "--name", "qbeast-connect-tests", "--master", master]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    process = SparkProcess(
        "spark connect server", command, base_dir / "logs" / "connect.out",
        spark_environment(base_dir, python), base_dir,
    ).start()
    try:
        process.wait_until(lambda: port_accepts(port), "gRPC endpoint")
    except BaseException:
        process.stop()
        raise
    return ConnectServer(process, port, warehouse)


_HIDE_ENGINE_SITECUSTOMIZE = '''\
"""Loaded by the cluster tests' worker Python: the installed qbeast engine is invisible here.

Only a copy found on sys.path outside the development tree (the zip the engine ships) may be
imported, which is what a cluster worker without a manual install sees.
"""
import importlib.machinery
import sys

_INSTALLED = {installed!r}


class _OnlyShippedEngine:
    def find_spec(self, name, path=None, target=None):
        if name != "qbeast" and not name.startswith("qbeast."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = (spec.origin or "") if spec is not None else ""
        if spec is None or origin.startswith(_INSTALLED):
            raise ModuleNotFoundError(
                "No module named %r on this worker (the installed engine is hidden)" % name,
                name=name,
            )
        return spec


sys.meta_path.insert(0, _OnlyShippedEngine())
'''


def python_without_installed_engine(base_dir: Path, installed_package_dir: Path) -> str:
    """An executable that runs this interpreter with the installed ``qbeast`` hidden from imports.

    Used as the Python of Spark's workers in the cluster tests: tasks then succeed only if the
    engine shipped itself to them, as it must on a cluster where nobody installed it.
    """
    hook_dir = base_dir / "hide-engine"
    hook_dir.mkdir(parents=True, exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(
        _HIDE_ENGINE_SITECUSTOMIZE.format(installed=str(installed_package_dir) + os.sep)
    )
    wrapper = base_dir / "python-without-engine"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{hook_dir}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        "export PYTHONPATH\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


#: Bound for one driver process (session start, jobs, stop) on the shared 2-core machine.
DRIVER_TIMEOUT_S = 420.0


class DriverFailed(AssertionError):
    """A driver process failed or timed out; the message carries the tail of its output."""


def driver_environment(worker_python: str) -> dict[str, str]:
    """Environment of a driver process: loopback only, executors run ``worker_python``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPARK_", "PYSPARK_")) or k == "SPARK_HOME"}
    env.update({
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOCAL_HOSTNAME": LOOPBACK,
        "PYSPARK_PYTHON": worker_python,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    })
    return env


def run_driver(args: list[str], env: Mapping[str, str], cwd: Path,
               timeout: float = DRIVER_TIMEOUT_S) -> tuple[str, str]:
    """Run ``python *args`` as its own process group; return (stdout, stderr) or raise.

    On timeout the whole group (the Python driver and the JVM it launched) is killed.
    """
    process = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, env=dict(env), cwd=cwd, start_new_session=True, text=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        raise DriverFailed(f"driver {args[:2]} timed out after {timeout:.0f}s:\n{_tail(err)}") from None
    if process.returncode != 0:
        raise DriverFailed(f"driver {args[:2]} exited with {process.returncode}:\n{_tail(err)}")
    return out, err


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])
