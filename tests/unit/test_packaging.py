"""The built wheel ships the JVM read bridge's jar, so installing it needs a Java runtime only.

``make`` compiles the jar (``jvm/build_jar.py``) into ``qbeast/jars/``; the wheel takes it as
package data. Building the wheel here (in place, without an isolated build environment) checks
that configuration, not a hand-made archive.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from qbeast.spark.bridge import JAR_NAME, jar_path

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
def test_the_wheel_contains_the_bridge_jar(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("dbt_qbeast-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert f"qbeast/jars/{JAR_NAME}" in names and "qbeast/spark/bridge.py" in names
        # the index page's script and styles, inlined into every page `qbeast show` writes
        assert {"qbeast/operations/index_page.js", "qbeast/operations/index_page.css"} <= names
        packaged = archive.read(f"qbeast/jars/{JAR_NAME}")
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    _check_requirements_cover_what_runs_here(metadata)
    assert packaged == jar_path().read_bytes()
    with zipfile.ZipFile(jar_path()) as jar:
        service = jar.read("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister")
        assert service.decode().strip() == "io.dbtqbeast.bridge.QbeastSource"
        assert "io/dbtqbeast/bridge/QbeastFileIndex.class" in jar.namelist()


def _check_requirements_cover_what_runs_here(metadata: str) -> None:
    """The wheel's ranges for the stack it is tested on admit the versions installed here (what
    the suite runs) and no newer minor line: a plain ``pip install`` of the wheel must not pick
    a dbt-core, dbt-spark or pyspark this project never ran with."""
    from importlib.metadata import version

    from packaging.requirements import Requirement
    from packaging.version import Version

    required = {r.name: r for r in (Requirement(line.split(":", 1)[1].strip())
                                    for line in metadata.splitlines()
                                    if line.startswith("Requires-Dist:")) if r.marker is None}
    for name in ("dbt-core", "dbt-spark", "pyspark"):
        installed = Version(version(name))
        assert installed in required[name].specifier, (name, str(required[name].specifier), installed)
        next_minor = Version(f"{installed.major}.{installed.minor + 1}.0")
        assert next_minor not in required[name].specifier, (name, str(required[name].specifier))
