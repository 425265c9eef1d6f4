"""What the engine's Spark jobs ask of the session they run on, on classic and Connect sessions.

The wings' jobs need a session's parallelism, a DataFrame's partition count and, for one step,
session confs of their own (``maxRecordsPerFile``, the Arrow batch size): this module holds those
helpers apart from :mod:`qbeast.spark.session`, which builds sessions and registers the read
wing, so that the wings import nothing that imports them back.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from qbeast.spark.shipping import is_connect_session

# -- what differs between classic and Spark Connect sessions ----------------------------------
# Spark Connect sessions have no SparkContext and DataFrames there have no RDD, so code that runs
# on both kinds of session asks these helpers instead of ``spark.sparkContext`` / ``df.rdd``.

_PARALLELISM_PROBE_ROWS = 1 << 16
_parallelism_by_session: dict[str, int] = {}


def default_parallelism(spark: Any) -> int:
    """``SparkContext.defaultParallelism`` of ``spark``, also behind Spark Connect.

    Connect does not expose it; ``spark.range`` without a partition count uses exactly that many
    partitions, so a tiny range job tells it (run once per session, then remembered).
    """
    if not is_connect_session(spark):
        return int(spark.sparkContext.defaultParallelism)
    key = str(spark.session_id)
    if key not in _parallelism_by_session:
        from pyspark.sql import functions as F

        ids = spark.range(0, _PARALLELISM_PROBE_ROWS).select(F.spark_partition_id().alias("p"))
        _parallelism_by_session[key] = int(ids.agg(F.max("p").alias("p")).first()["p"]) + 1
    return _parallelism_by_session[key]


def partition_count(df: Any) -> int:
    """Number of partitions of ``df``: ``df.rdd.getNumPartitions()`` where RDDs exist.

    Behind Spark Connect the plan's partitioning is not visible to the client; the highest
    partition id that holds a row (plus one) is found by running the plan once, so call this only
    where a pass over the data is acceptable.
    """
    if not is_connect_session(df.sparkSession):
        return int(df.rdd.getNumPartitions())
    from pyspark.sql import functions as F

    highest = df.select(F.spark_partition_id().alias("p")).agg(F.max("p").alias("p")).first()["p"]
    return 1 if highest is None else int(highest) + 1


#: Session confs held by running engine steps: (session, key) -> [holders, previous, value].
_held_confs: dict[tuple[Any, str], list[Any]] = {}
_held_confs_lock = threading.Lock()


def _conf_owner(spark: Any) -> Any:
    """What owns ``spark``'s runtime confs: the JVM session (two Python wrappers of one session
    share them), or the Python object where there is no JVM handle (Spark Connect)."""
    jvm_session = getattr(spark, "_jsparkSession", None)
    return ("jvm", jvm_session.hashCode()) if jvm_session is not None else ("python", id(spark))


@contextlib.contextmanager
def scoped_confs(spark: Any, confs: Mapping[str, str]) -> Iterator[None]:
    """Set session confs for the duration of the block; put the previous values back after.

    Session confs are shared by every thread of the session (dbt runs models in threads on one
    session). Blocks that overlap on one session share the values: the first one saves the
    previous value and sets it, the last one to end puts it back. Saving and restoring per block
    would let a block that starts inside another save the other's value as "previous" (and so
    lose the user's), and put a value back while the other still writes with it. Two blocks
    asking different values for one key at the same time are refused.
    """
    session = _conf_owner(spark)
    entered: list[tuple[Any, str]] = []
    try:
        with _held_confs_lock:
            for key, value in confs.items():
                held = _held_confs.get((session, key))
                if held is not None and held[2] != str(value):
                    raise RuntimeError(
                        f"session conf {key} is held at {held[2]!r} by another engine step of this "
                        f"session; this one needs {value!r}"
                    )
                if held is None:
                    held = _held_confs[(session, key)] = [0, spark.conf.get(key, None), str(value)]
                    spark.conf.set(key, str(value))
                held[0] += 1
                entered.append((session, key))
        yield
    finally:
        with _held_confs_lock:
            for slot in entered:
                held = _held_confs[slot]
                held[0] -= 1
                if held[0] == 0:
                    del _held_confs[slot]
                    if held[1] is None:
                        spark.conf.unset(slot[1])
                    else:
                        spark.conf.set(slot[1], held[1])


@contextlib.contextmanager
def restored_confs(spark: Any, keys: Iterable[str]) -> Iterator[None]:
    """Put the session settings ``keys`` back as they were (unset if they were) when the block ends.

    Engine steps that need a setting for one job, and tests that hand the shared session to code
    that changes its runtime settings, both rely on this so the session is left as they found it.
    """
    previous = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
