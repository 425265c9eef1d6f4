"""Measuring helpers shared by the benchmark modules of ``run_all.py``.

The machine running the suite is shared and noisy, so every comparison is *interleaved*: one
warm-up per contender, then rounds in which each contender runs once, in a rotating order; the
report keeps the median of each. I/O figures come from Spark itself (the metrics of the file scan
nodes of the executed plan), not from our own read plans, so that qbeast and plain-parquet reads
are counted by the same code.
"""
from __future__ import annotations

import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# scan metrics are read by the engine's helper: benchmarks and approximate answers count alike
from qbeast.spark.read.scan_metrics import ScanIO, collect_with_io  # noqa: F401

logger = logging.getLogger("qbeast.benchmarks")

HERE = Path(__file__).resolve().parent
WORK = HERE / ".data" / "work"


def spark_session(driver_memory: str = "8g"):
    """The benchmark's Spark session: local[2] (the machine's two cores), engine settings."""
    from qbeast.spark.session import get_or_create_session

    spark = get_or_create_session(
        {"spark.driver.memory": driver_memory, "spark.sql.shuffle.partitions": "8",
         # The benchmark reads freshly rewritten folders under the same paths: no stale listings.
         "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000"},
        master="local[2]", app_name="qbeast-benchmarks",
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def fresh_dir(name: str) -> Path:
    """An empty folder under ``.data/work`` (removed first if it exists)."""
    path = WORK / name
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def interleaved(cases: dict[str, Callable[[], Any]], repeat: int, warmup: bool = True) -> dict[str, list[float]]:
    """Times of ``repeat`` rounds of every case, the cases alternating within each round.

    The order rotates between rounds so that no contender always runs right after the same
    neighbour (caches, garbage collection). With ``warmup`` each case runs once untimed first.
    """
    names = list(cases)
    if warmup:
        for name in names:
            cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, _ = timed(cases[name])
            times[name].append(seconds)
    return times


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def folder_bytes(path: Path) -> tuple[int, int]:
    """(parquet files, their total bytes) directly under ``path`` (logs excluded)."""
    files = [p for p in path.glob("*.parquet")]
    return len(files), sum(p.stat().st_size for p in files)


def machine_facts() -> dict[str, Any]:
    """What the report states about the machine and the software versions."""
    import deltalake
    import pyarrow
    import pyspark

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    commit = ""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                                capture_output=True, check=False).stdout.strip()
    except OSError:
        pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "os": platform.platform(),
        "python": sys.version.split()[0], "pyspark": pyspark.__version__,
        "deltalake": deltalake.__version__, "pyarrow": pyarrow.__version__, "commit": commit,
    }
