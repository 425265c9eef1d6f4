"""Metadata: snapshot load and file selection on a table with 10,000 files and 1,000 commits.

The table comes from ``bench_snapshot.build_table`` (the log layer's own benchmark: 1,000 commits,
a checkpoint every 10, 10,000 active files with stats and Qbeast block tags), built into a folder
of this suite, plus one commit that records the revision its tags refer to (two linear columns,
``user_id`` and ``price``), so that the Qbeast read planner can walk the OTree.

Contenders, timed alternately in the same process:

* snapshot load: ``DeltaLog.snapshot()`` and ``QbeastSnapshot.load`` vs ``deltalake.DeltaTable``;
* file selection for a predicate on the indexed columns: ``QbeastTable.read_plan(filter=...)``
  (load + OTree + stats pruning) vs ``deltalake`` load + ``to_pyarrow_dataset().get_fragments``
  with the same predicate (load + stats pruning), and vs the cheapest hand-written alternative,
  ``get_add_actions`` + a numpy min/max test;
* file selection for a 10% sample: ``read_plan(fraction=0.1)`` (deltalake has no counterpart).
"""
from __future__ import annotations

import dataclasses
import logging
import random
from pathlib import Path
from typing import Any

from measure import WORK, interleaved, median

logger = logging.getLogger("qbeast.benchmarks.metadata")

PREDICATE = "user_id < 500 AND price < 100.0"


def _revision_json(table_id: str) -> str:
    from qbeast.core.revision import Revision
    from qbeast.core.transformations import LinearTransformation
    from qbeast.core.transformers import LinearTransformer
    from qbeast.core.types import QDataType

    rng = random.Random(3)
    revision = Revision(1, 1_700_000_000_000, table_id, 50_000, (
        LinearTransformer("user_id", QDataType.INTEGER), LinearTransformer("price", QDataType.DOUBLE)),
        (LinearTransformation.create(0, 9000, QDataType.INTEGER, rng),
         LinearTransformation.create(0.5, 999.5, QDataType.DOUBLE, rng)))
    return revision.to_json()


def build(path: Path) -> None:
    """The 10,000-file table (reusing the snapshot benchmark's generator) + a revision commit."""
    import bench_snapshot

    from qbeast.core.revision import revision_key
    from qbeast.delta.log import DeltaLog

    bench_snapshot.build_table(path)
    log = DeltaLog.for_path(str(path))
    snapshot = log.snapshot()
    configuration = dict(snapshot.metadata.configuration)
    configuration[revision_key(1)] = _revision_json(str(path))
    transaction = log.start_transaction(snapshot)
    transaction.update_metadata(dataclasses.replace(snapshot.metadata, configuration=configuration))
    transaction.commit("SET TBLPROPERTIES", {"properties": "qbeast.revision.1"})


def run(spark, repeat: int) -> dict[str, Any]:
    import pyarrow.dataset as pads
    from deltalake import DeltaTable

    import bench_snapshot
    from qbeast import QbeastTable
    from qbeast.delta.log import DeltaLog
    from qbeast.snapshot import QbeastSnapshot

    path = WORK / "metadata-10k-files"
    marker = path / "_delta_log" / f"{bench_snapshot.COMMITS:020d}.json"
    if not marker.exists():
        build(path)
    where = str(path)
    table = QbeastTable.for_path(spark, where)
    expression = (pads.field("user_id") < 500) & (pads.field("price") < 100.0)
    counts: dict[str, int] = {}

    def delta_load():
        DeltaLog.for_path(where).snapshot()

    def qbeast_load():
        QbeastSnapshot.load(where)

    def deltalake_load():
        DeltaTable(where)

    def qbeast_select():
        counts["qbeast predicate"] = len(table.read_plan(filter=PREDICATE).files)

    def deltalake_select():
        dataset = DeltaTable(where).to_pyarrow_dataset()
        counts["deltalake predicate"] = len(list(dataset.get_fragments(filter=expression)))

    def deltalake_stats_select():
        # The cheapest hand-written skipping over deltalake's add actions: min/max via numpy.
        import numpy as np
        import pyarrow as pa

        actions = pa.table(DeltaTable(where).get_add_actions(flatten=True))
        keep = (actions["min.user_id"].to_numpy(zero_copy_only=False) < 500) & (
            actions["min.price"].to_numpy(zero_copy_only=False) < 100.0)
        counts["deltalake add actions + numpy"] = int(np.count_nonzero(keep))

    def qbeast_sample():
        counts["qbeast sample 10%"] = len(table.read_plan(fraction=0.1).files)

    loads = interleaved({"dbt-qbeast DeltaLog.snapshot": delta_load,
                         "dbt-qbeast QbeastSnapshot.load": qbeast_load,
                         "deltalake DeltaTable": deltalake_load}, repeat)
    selects = interleaved({"dbt-qbeast read_plan(filter)": qbeast_select,
                           "deltalake get_fragments(filter)": deltalake_select,
                           "deltalake get_add_actions + numpy min/max": deltalake_stats_select,
                           "dbt-qbeast read_plan(fraction=0.1)": qbeast_sample}, repeat)
    snapshot = DeltaLog.for_path(where).snapshot()
    result = {
        "files": len(snapshot.files), "commits": snapshot.version + 1, "predicate": PREDICATE,
        "repeat": repeat, "selected_files": counts,
        "load": {k: median(v) for k, v in loads.items()},
        "select": {k: median(v) for k, v in selects.items()},
    }
    logger.info("metadata: %s", result)
    return result
