"""Two sessions in a fresh process (the shared test session has the jar loaded already).

1. The installation has no bridge jar: the engine's session takes the Python data source for
   ``qbeast`` and says why in one log line; SQL over a catalog table still returns the rows.
2. A session built without the engine's helper (no jar on ``spark.jars``, no extension):
   ``qbeast.register`` adds the jar and the rule to the running session, and SQL reads natively.

Prints one JSON document with what it saw; ``test_sql_bridge.py`` asserts on it.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path


def main(work: str) -> int:
    import qbeast
    import qbeast.spark.bridge as bridge
    from qbeast.spark.catalog import create_table
    from qbeast.spark.session import get_or_create_session

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logging.getLogger("qbeast.spark.bridge").addHandler(Keep())
    logging.getLogger("qbeast.spark.bridge").setLevel(logging.INFO)
    out: dict = {}
    real_jar = bridge.JAR_PATH
    bridge.JAR_PATH = Path(work) / "absent" / bridge.JAR_NAME  # as if built without a JDK
    conf = {"spark.sql.warehouse.dir": f"{work}/warehouse", "spark.ui.enabled": "false"}
    spark = get_or_create_session(conf, master="local[1]")
    path = f"{work}/table"
    data = spark.range(0, 3000).selectExpr("id", "cast(pmod(hash(id), 100) as int) as zone")
    qbeast.write(data, path, "zone", cube_size=300, mode="overwrite")
    out["no_jar"] = {
        "register": qbeast.register(spark),
        "conf_jars": spark.conf.get("spark.jars", ""),
        "expected": data.where("zone < 20").count(),  # without any qbeast reader
    }
    create_table(spark, "fallback_events", path)
    query = spark.sql("select count(*) from fallback_events where zone < 20")
    out["no_jar"]["count"] = query.first()[0]
    out["no_jar"]["plan"] = str(query._jdf.queryExecution().executedPlan().toString())
    out["no_jar"]["log"] = list(lines)
    spark.stop()

    bridge.JAR_PATH = real_jar
    from pyspark.sql import SparkSession

    plain = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    out["running"] = {"register": qbeast.register(plain)}
    df = plain.read.format("qbeast").load(path).where("zone < 20")
    out["running"]["count"] = df.count()
    out["running"]["plan"] = str(df._jdf.queryExecution().executedPlan().toString())
    sampled = plain.read.format("qbeast").load(path).sample(0.1)
    engine = qbeast.QbeastTable.for_path(plain, path).sample(0.1)
    out["running"]["sample_equal"] = sorted(r.id for r in sampled.collect()) == sorted(r.id for r in engine.collect())
    plain.stop()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.exit(main(sys.argv[1]))
