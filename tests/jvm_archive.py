"""Build the class-data archive the test suite's JVMs start from (``make test`` runs this once).

Most of the suite's time in its server, cluster and dbt-process tests is JVMs starting: each dbt
process, Spark Connect and Thrift server, standalone master, worker and executor loads and verifies
some ten thousand classes of Spark, Hadoop and Hive before it does anything. The JDK can map those
classes, already parsed and verified, from an archive written by an earlier JVM on the same class
path (application class-data sharing: ``-XX:ArchiveClassesAtExit`` writes it,
``-XX:SharedArchiveFile`` reads it). Measured on a 2-core machine, a Spark session with a Hive
catalog started and ran its first job in 5.5-6 s with the archive against 9-10 s without.

This script runs, in a JVM of its own, what the suite's JVMs do most (a Hive catalog, a Qbeast
write with the bridge jar, a SQL read, a merge) and writes the classes it loaded to ``--output``.
``tests/conftest.py`` hands the archive to every JVM the tests start, when it exists. A JVM whose
class path differs from the archive's (extra jars put first) simply starts without it: the
archive changes how fast a JVM starts, never what it runs, and the tests check nothing of it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from jvm_options import SHORT_LIVED_JIT_AND_GC

#: What the archived JVM runs: the engine's usual first steps on a Hive session.
WORKLOAD = """
import sys
from qbeast.spark.session import get_or_create_session
import qbeast

folder = sys.argv[1]
spark = get_or_create_session({
    "spark.sql.warehouse.dir": folder + "/warehouse",
    "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={folder}/metastore_db;create=true",
    "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={folder}/metastore_db;create=true",
    "spark.driver.extraJavaOptions": f"-Dderby.system.home={folder}",
    "spark.sql.shuffle.partitions": "2",
}, master="local[2]", app_name="jvm-archive", hive=True)
path = folder + "/events"
rows = spark.range(0, 5000).selectExpr("id", "id % 97 as x", "cast(id % 13 as string) as s")
qbeast.write(rows, path, columns_to_index=["x"], cube_size=1000)
table = qbeast.QbeastTable.for_path(spark, path)
table.merge(spark.range(0, 10).selectExpr("id", "id as x", "'m' as s"), on=["id"])
spark.sql(f"create table t using qbeast location '{path}'")
spark.sql("select s, count(*) from t where x < 10 group by s").collect()
spark.sql("create table p using parquet as select * from t").collect()
table.sample(0.1).count()
spark.stop()
"""


def build(output: Path) -> bool:
    """Write the archive to ``output`` (atomically); False, saying why, when the JVM could not."""
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    env = dict(os.environ)
    # The flags of the JVMs that read the archive: C1 only also makes this build faster (42 s
    # against 47-53 s with the JDK's defaults on a 2-core machine).
    env["JAVA_TOOL_OPTIONS"] = " ".join(
        [env.get("JAVA_TOOL_OPTIONS", SHORT_LIVED_JIT_AND_GC), f"-XX:ArchiveClassesAtExit={partial}",
         "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]).strip()
    env["PYSPARK_PYTHON"] = sys.executable
    with tempfile.TemporaryDirectory(prefix="qbeast-jvm-archive-") as folder:
        result = subprocess.run([sys.executable, "-c", WORKLOAD, folder], env=env,
                                capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        tail = (result.stderr or result.stdout)[-1500:]
        print(f"NOTE: no JVM class archive (the tests' JVMs start without one): {tail}",
              file=sys.stderr)
        return False
    partial.replace(output)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--output", required=True, type=Path)
    args = parser.parse_args(argv)
    if build(args.output):
        print(f"JVM class archive: {args.output} ({args.output.stat().st_size // 2**20} MiB)")
    return 0  # an archive is a speed-up: its absence never fails the build


if __name__ == "__main__":
    sys.exit(main())
