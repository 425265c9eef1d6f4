"""Packing and shipping the engine's code, and the session rules for clusters and Connect.

No server is needed here: the archive, the mode rules, the Connect settings filter and the test
workers' engine-hiding Python are checked directly; the helpers that differ between classic and
Connect sessions are checked on the shared local session (the Connect side runs in
test_spark_connect.py).
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cluster_processes import python_without_installed_engine  # noqa: E402

from qbeast.errors import InvalidOptionError  # noqa: E402
from qbeast.spark.runtime import default_parallelism, partition_count  # noqa: E402
from qbeast.spark.session import connect_session_conf, session_conf  # noqa: E402
from qbeast.spark.shipping import (  # noqa: E402
    SHIP_ENGINE_KEY,
    build_engine_archive,
    engine_archive,
    engine_package_dir,
    ship_engine_mode,
    tasks_leave_process,
)


def _fake_package(root: Path) -> Path:
    package = root / "qbeast"
    (package / "core").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "cube.py").write_text("def depth():\n    return 3\n")
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0\0")
    (package / "core" / "stale.pyc").write_bytes(b"\0\0")
    return package


def test_archive_holds_the_package_sources_only(tmp_path):
    package = _fake_package(tmp_path / "src")
    archive = build_engine_archive(package, tmp_path)
    names = sorted(zipfile.ZipFile(archive).namelist())
    assert names == ["qbeast/__init__.py", "qbeast/core/__init__.py", "qbeast/core/cube.py"]


def test_archive_name_follows_the_content(tmp_path):
    package = _fake_package(tmp_path / "src")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = build_engine_archive(package, tmp_path / "a")
    again = build_engine_archive(package, tmp_path / "b")
    assert first.name == again.name and first.read_bytes() == again.read_bytes()
    (package / "core" / "cube.py").write_text("def depth():\n    return 4\n")
    changed = build_engine_archive(package, tmp_path / "b")
    assert changed.name != first.name


def test_engine_archive_covers_every_module_of_the_installed_engine():
    archive = engine_archive()
    assert engine_archive() == archive  # built once per process
    package = engine_package_dir()
    expected = {f"qbeast/{p.relative_to(package).as_posix()}" for p in package.rglob("*.py")
                if "__pycache__" not in p.parts}
    assert expected <= set(zipfile.ZipFile(archive).namelist())


def test_worker_python_hides_the_installed_engine_but_imports_the_archive(tmp_path):
    """The premise of the cluster tests: their workers only see a shipped engine."""
    python = python_without_installed_engine(tmp_path, engine_package_dir())
    hidden = subprocess.run([python, "-c", "import qbeast"], capture_output=True, text=True, timeout=60)
    assert hidden.returncode != 0 and "installed engine is hidden" in hidden.stderr
    probe = (f"import sys; sys.path.insert(0, {str(engine_archive())!r}); "
             "import qbeast.spark.write.writer, qbeast.core.cube_id; print(qbeast.__file__)")
    shipped = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.stdout.strip() == f"{engine_archive()}/qbeast/__init__.py"


@pytest.mark.parametrize(
    ("master", "remote", "leaves"),
    [
        ("local", None, False),
        ("local[2]", None, False),
        ("local[*]", None, False),
        ("LOCAL[4,2]", None, False),
        ("local-cluster[2,1,1024]", None, True),
        ("spark://127.0.0.1:7077", None, True),
        ("yarn", None, True),
        ("k8s://https://k8s.example:443", None, True),
        (None, "sc://127.0.0.1:15002", True),
        (None, None, False),
    ],
)
def test_which_sessions_run_tasks_outside_this_process(master, remote, leaves):
    assert tasks_leave_process(master, remote) is leaves


def test_ship_engine_mode_accepts_the_documented_values():
    assert ship_engine_mode({}) == "auto"
    assert ship_engine_mode({SHIP_ENGINE_KEY: " False "}) == "false"
    assert ship_engine_mode({SHIP_ENGINE_KEY: "TRUE"}) == "true"
    with pytest.raises(InvalidOptionError) as info:
        ship_engine_mode({SHIP_ENGINE_KEY: "sometimes"})
    message = str(info.value)
    assert SHIP_ENGINE_KEY in message and "'sometimes'" in message
    assert "auto, true, false" in message


def test_connect_sessions_keep_only_settings_a_client_may_change():
    merged = session_conf({
        "spark.remote": "sc://127.0.0.1:15002",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.warehouse.dir": "/tmp/w",
        "spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=x",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        SHIP_ENGINE_KEY: "auto",
    })
    kept = connect_session_conf(merged)
    assert kept == {
        "spark.remote": "sc://127.0.0.1:15002",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        SHIP_ENGINE_KEY: "auto",
    }


@pytest.mark.spark
def test_classic_session_helpers_match_spark_context(spark):
    assert default_parallelism(spark) == spark.sparkContext.defaultParallelism
    frame = spark.range(0, 100, 1, 3)
    assert partition_count(frame) == frame.rdd.getNumPartitions() == 3
