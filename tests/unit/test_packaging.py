"""The built wheel ships the JVM read bridge's jar, so installing it needs a Java runtime only,
and installed into a fresh virtual environment it builds a qbeast model.

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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once for this module."""
    folder = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(folder), str(REPO)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (built_wheel,) = folder.glob("dbt_qbeast-*.whl")
    return built_wheel


@pytest.mark.slow
@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
def test_the_wheel_contains_the_bridge_jar(wheel):
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


#: uv next to this interpreter: ``make install`` installs the test environment with it, so its
#: cache holds every package the wheel needs at the versions of constraints.txt.
UV = Path(sys.executable).with_name("uv")

MODEL = ("{{ config(materialized='qbeast', columns_to_index=['id']) }}\n"
         "select id, id % 7 as g from range(1000)\n")


@pytest.mark.slow
@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
@pytest.mark.skipif(not UV.is_file(), reason="uv is not installed next to this Python (make "
                    "install fell back to pip): the fresh environment is installed from uv's cache")
def test_the_wheel_installed_in_a_fresh_environment_builds_a_model(wheel, tmp_path):
    """A new virtual environment (no system packages, no pip) gets the wheel and its dependencies,
    at the versions the suite runs (constraints.txt; the wheel's own ranges are checked above, so
    a plain ``pip install`` resolves within them), from uv's cache without the network; its own
    ``dbt run``, started with an empty environment outside the repository, builds a qbeast model
    with the engine and adapter of that environment."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--offline", "--python", str(python),
         "-c", str(REPO / "constraints.txt"), str(wheel)],
        capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    import yaml

    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    files = {"dbt_project.yml": {"name": "fresh", "version": "1.0", "config-version": 2,
                                 "profile": "fresh"},
             "profiles.yml": {"fresh": {"target": "dev", "outputs": {"dev": {
                 "type": "qbeast", "schema": "fresh", "threads": 1}}}}}
    for name, content in files.items():
        (project / name).write_text(yaml.safe_dump(content))
    (project / "models" / "numbers.sql").write_text(MODEL)
    clean_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    origins = subprocess.run(
        [str(python), "-c", "import qbeast, dbt.adapters.qbeast as a; print(qbeast.__file__); "
         "print(a.__file__)"], capture_output=True, text=True, cwd=project, env=clean_env,
        timeout=120)
    assert origins.returncode == 0, origins.stderr[-3000:]
    assert all(line.startswith(str(venv)) for line in origins.stdout.split()), origins.stdout
    run = subprocess.run([str(venv / "bin" / "dbt"), "run", "--project-dir", str(project),
                          "--profiles-dir", str(project)],
                         capture_output=True, text=True, cwd=project, env=clean_env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "PASS=1" in run.stdout
    import qbeast

    (table,) = (project / ".qbeast").rglob("numbers")
    snapshot = qbeast.QbeastTable.for_path(None, str(table)).snapshot()
    assert snapshot.delta.num_records == 1000
