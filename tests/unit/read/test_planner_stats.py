"""The read planner's min/max check gives each file the same answer whichever way it runs:
against the snapshot's columns (built once, kept for the snapshot's later plans) or against the
few candidates' own statistics (a plan that an index narrowed parses no other file's)."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from qbeast.core import expressions as ex
from qbeast.core.columns import column_types
from qbeast.delta.scan import scan_schema
from qbeast.spark.read import planner


def test_snapshot_columns_and_candidates_alone_agree(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for i in range(12):  # one file per commit, ids 10*i .. 10*i+9; names vary too
        ids = list(range(10 * i, 10 * i + 10))
        write_deltalake(path, pa.table({"id": pa.array(ids, pa.int64()),
                                        "name": [f"n{i:02d}"] * 10}), mode="append")
    delta = planner.load_snapshot(path).delta
    layout, types = scan_schema(delta), column_types(delta.schema)
    by_id = sorted(delta.files.values(), key=lambda a: a.parsed_stats["minValues"]["id"])
    predicate = ex.Or(ex.In("id", (5, 57)), ex.EqualTo("name", "n11"))
    want = [True, False, False, False, False, True, False, False, False, False, False, True]

    planner._STATS.pop(delta, None)
    few = by_id[:2]  # under a quarter of the files: their own statistics, nothing kept
    assert planner._stats_may_match(delta, layout, types, predicate, few) == want[:2]
    assert delta not in planner._STATS
    # most files: the snapshot's columns, kept for the next plan
    assert planner._stats_may_match(delta, layout, types, predicate, by_id) == want
    assert delta in planner._STATS
    assert planner._stats_may_match(delta, layout, types, predicate, few) == want[:2]
    assert planner._stats_may_match(delta, layout, types, predicate, by_id[::-1]) == want[::-1]
