"""Fixed cost of one dbt command with a trivial `qbeast` model, per connection method.

What a user pays for ``dbt run --select trivial_qbeast`` typed in a shell, start to end (a fresh
``dbt`` process each time: Python's start, dbt's start-up, the connection, the 10-row model):

* ``session`` — the engine and a Spark driver start in the dbt process (the embedded default);
* ``connect`` — the dbt process opens a Spark Connect session to a running ``qbeast serve``;
* ``thrift`` — the dbt process sends SQL to the same server's Thrift endpoint (when the adapter
  offers that method).

The server is started once, before the rounds, and its own start-up is reported beside them: a
server pays the driver's start-up once, every ``session`` command pays it again. One warm-up
command per method, then ``--repeat`` rounds, each round running the methods in a rotated order.

Writes ``benchmarks/results/serve_fixed_cost.md`` (and prints it).
Usage: python benchmarks/bench_serve_fixed_cost.py [--repeat N]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import fresh_dir, machine_facts  # noqa: E402

BIN = Path(sys.executable).parent
MODEL = ("{{ config(materialized='qbeast', columns_to_index=['id']) }}\n"
         "select id, cast(id as double) / 3 as x from range(10)\n")
PROJECT = "serve_fixed_cost"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def thrift_available() -> bool:
    """Whether this adapter accepts `method: thrift` (the report says so when it does not)."""
    from dbt.adapters.qbeast.credentials import QbeastCredentials

    try:
        QbeastCredentials(method="thrift", host="127.0.0.1", port=10000, schema="s")
    except Exception:  # noqa: BLE001 - a refused method, whatever its error type
        return False
    return True


def write_project(root: Path, connect_port: int, thrift_port: int, methods: list[str]) -> Path:
    project = root / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": PROJECT, "version": "1.0", "config-version": 2, "profile": PROJECT,
        "model-paths": ["models"]}))
    (project / "models" / "trivial_qbeast.sql").write_text(MODEL)
    targets: dict[str, dict[str, Any]] = {
        "session": {"type": "qbeast", "schema": "bench", "threads": 1,
                    "catalog_dir": ".qbeast_bench"},
        "connect": {"type": "qbeast", "method": "connect", "schema": "bench_connect",
                    "host": f"sc://127.0.0.1:{connect_port}", "threads": 1},
        "thrift": {"type": "qbeast", "method": "thrift", "schema": "bench_thrift",
                   "host": "127.0.0.1", "port": thrift_port, "user": "bench", "threads": 1},
    }
    profiles = {PROJECT: {"target": "session",
                          "outputs": {m: targets[m] for m in methods}}}
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles, sort_keys=False))
    return project


def start_server(root: Path, connect_port: int, thrift_port: int) -> tuple[subprocess.Popen, float]:
    log = root / "serve.log"
    began = time.perf_counter()
    server = subprocess.Popen(
        [str(BIN / "qbeast"), "serve", "--catalog-dir", str(root / "server_catalog"),
         "--connect-port", str(connect_port), "--thrift-port", str(thrift_port)],
        stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    while "qbeast serve: ready" not in log.read_text(errors="replace"):
        if server.poll() is not None:
            raise RuntimeError(f"qbeast serve exited:\n{log.read_text()[-3000:]}")
        if time.perf_counter() - began > 300:
            server.kill()
            raise RuntimeError("qbeast serve not ready in 300 s")
        time.sleep(0.1)
    return server, time.perf_counter() - began


def run_command(project: Path, target: str) -> float:
    """Wall seconds of one `dbt run` in a fresh process, as a shell user would wait for it."""
    began = time.perf_counter()
    run = subprocess.run(
        [str(BIN / "dbt"), "--no-use-colors", "run", "--select", "trivial_qbeast", "--target",
         target, "--project-dir", str(project), "--profiles-dir", str(project)],
        capture_output=True, text=True, cwd=project, check=False, env={**os.environ})
    seconds = time.perf_counter() - began
    if run.returncode != 0:
        raise RuntimeError(f"dbt run --target {target} failed:\n{run.stdout[-3000:]}")
    return seconds


def measure(repeat: int) -> dict[str, Any]:
    root = fresh_dir("serve_fixed_cost")
    connect_port, thrift_port = free_port(), free_port()
    methods = ["session", "connect"] + (["thrift"] if thrift_available() else [])
    project = write_project(root, connect_port, thrift_port, methods)
    load_before = os.getloadavg()[0]
    server, server_start = start_server(root, connect_port, thrift_port)
    times: dict[str, list[float]] = {m: [] for m in methods}
    try:
        for method in methods:  # warm-up: first run creates the table, caches are filled
            run_command(project, method)
        for round_number in range(repeat):
            shift = round_number % len(methods)
            for method in methods[shift:] + methods[:shift]:
                times[method].append(run_command(project, method))
    finally:
        server.terminate()
        server.wait(timeout=120)
    return {"methods": methods, "times": times, "server_start": server_start, "repeat": repeat,
            "load": (load_before, os.getloadavg()[0]), "machine": machine_facts()}


def report(results: dict[str, Any]) -> str:
    methods, times = results["methods"], results["times"]
    medians = {m: statistics.median(times[m]) for m in methods}
    base = medians["session"]
    load_before, load_after = results["load"]
    lines = [
        "# Fixed cost of a dbt command per connection method",
        "",
        f"`dbt run --select trivial_qbeast` (a 10-row `qbeast` model) in a fresh process, wall "
        f"time start to end; median of {results['repeat']} rotated rounds after one warm-up per "
        "method. Produced by `benchmarks/bench_serve_fixed_cost.py`; "
        f"1-minute load average {load_before:.1f} at the start, {load_after:.1f} at the end "
        f"({results['machine'].get('cores', '?')} cores).",
        "",
        "| method | median | min | max | vs session |",
        "|---|---:|---:|---:|---:|",
    ]
    for m in methods:
        lines.append(f"| {m} | {medians[m]:.2f} s | {min(times[m]):.2f} s | "
                     f"{max(times[m]):.2f} s | {medians[m] / base:.2f}x |")
    if "thrift" not in methods:
        lines += ["", "`thrift`: not measured, this adapter does not accept `method: thrift`."]
    lines += ["", f"`qbeast serve` start-up (once, until it serves): {results['server_start']:.1f} s."]
    for m in methods:
        if m == "session":
            continue
        saved = base - medians[m]
        if saved > 0:
            lines.append(f"With `{m}` every command saves {saved:.1f} s: the server's start-up is "
                         f"paid back after {results['server_start'] / saved:.1f} commands.")
        else:
            lines.append(f"With `{m}` a command is {-saved:.1f} s slower than `session`: no "
                         "saving here.")
    lines += ["", "A `session` command starts a Spark driver (a JVM, the engine's jar, the "
              "embedded metastore) for every command; `connect` and `thrift` reach a driver that "
              "is already running, so what is left is Python's and dbt's own start-up, the "
              "connection and the model."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be a positive integer")
    text = report(measure(args.repeat))
    out = HERE / "results" / "serve_fixed_cost.md"
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
