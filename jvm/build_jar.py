"""Build the JVM read bridge jar: ``javac`` against the installed pyspark's jars, then zip.

``make`` runs this (``make install`` and everything that depends on it), writing
``qbeast/jars/qbeast-bridge.jar``, which the wheel ships as package data: users need a JRE
only. On a machine without ``javac`` it says so and exits 0; the engine then reads ``qbeast`` in
SQL with its Python data source (:mod:`qbeast.spark.bridge`). The jar is never committed.

The classes are compiled for Java 17 (``--release 17``, what Spark 4 runs on) against the Spark
of this environment; ``jvm/`` uses reflection where Spark's internal constructors differ between
the minors the package declares.

Usage: python jvm/build_jar.py [--output PATH] [--spark-jars DIR]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOURCES = HERE / "src" / "main" / "java"
RESOURCES = HERE / "src" / "main" / "resources"
DEFAULT_OUTPUT = REPO / "qbeast" / "jars" / "qbeast-bridge.jar"
#: A fixed timestamp for every entry, so that the same sources give the same jar bytes.
_ENTRY_TIME = (2024, 1, 1, 0, 0, 0)


def pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def build(output: Path, spark_jars: Path) -> bool:
    """Compile and package; False (with a message) when there is no ``javac``."""
    javac = shutil.which("javac")
    if javac is None:
        print(f"jvm/build_jar.py: no javac on PATH: {output.name} not built; SQL reads of qbeast "
              "tables will use the Python data source (install a JDK 17 and run make)", file=sys.stderr)
        return False
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    with tempfile.TemporaryDirectory(prefix="qbeast-bridge-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8",
                   "-cp", str(spark_jars / "*"), "-d", str(classes), *sources]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            raise SystemExit(f"jvm/build_jar.py: javac failed (exit {result.returncode})")
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            manifest = zipfile.ZipInfo("META-INF/MANIFEST.MF", _ENTRY_TIME)
            jar.writestr(manifest, "Manifest-Version: 1.0\nCreated-By: dbt-qbeast jvm/build_jar.py\n\n")
            for root in (classes, RESOURCES):
                for path in sorted(p for p in root.rglob("*") if p.is_file()):
                    entry = zipfile.ZipInfo(path.relative_to(root).as_posix(), _ENTRY_TIME)
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    jar.writestr(entry, path.read_bytes())
        partial.replace(output)
    print(f"jvm/build_jar.py: built {output} ({len(sources)} sources)")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--spark-jars", type=Path, default=None,
                        help="folder of Spark's jars to compile against (default: pyspark's)")
    args = parser.parse_args(argv)
    build(args.output, args.spark_jars or pyspark_jars())
    return 0


if __name__ == "__main__":
    sys.exit(main())
