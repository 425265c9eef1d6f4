"""The same table with its block tags in every format generation reads the same rows.

A generated table's log is rewritten (in a copy) into the tag layouts of older writers (FORMAT §5):
blocks with ``"replicated": false`` (0.6-0.7), blocks keyed ``"cube"`` (the documented variant)
and pre-0.6 flat tags (one block per file, all values strings). Samples must return exactly the
same rows; the block-list variants must also select the same files, while pre-0.6 tables are read
as plain Delta (every file) until upgraded.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import qbeast
from qbeast import QbeastTable

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def original(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("generations") / "current")
    df = spark.range(3000).selectExpr(
        "id", "cast(id * 7919 % 1000 as int) AS a", "cast(id * 104729 % 997 as double) / 997 AS b"
    )
    qbeast.write(df, path, "a,b", cube_size=150)
    return path


def _rewrite_tags(source: str, target: Path, variant: str) -> str:
    shutil.copytree(source, target)
    for commit in sorted((target / "_delta_log").glob("*.json")):
        lines = []
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            add = action.get("add")
            if add and add.get("tags") and "blocks" in add["tags"]:
                add["tags"] = _variant_tags(add["tags"], variant)
            lines.append(json.dumps(action, separators=(",", ":")))
        commit.write_text("\n".join(lines) + "\n")
    return str(target)


def _variant_tags(tags: dict, variant: str) -> dict:
    blocks = json.loads(tags["blocks"])
    if variant == "replicated":
        for block in blocks:
            block["replicated"] = False
    elif variant == "cube-key":
        blocks = [{"cube" if k == "cubeId" else k: v for k, v in b.items()} for b in blocks]
    elif variant == "pre-0.6":
        first = blocks[0]
        return {
            "state": "FLOODED", "cube": first["cubeId"], "revision": tags["revision"],
            "elementCount": str(first["elementCount"]), "minWeight": str(first["minWeight"]),
            "maxWeight": str(first["maxWeight"]),
        }
    return {"revision": tags["revision"], "blocks": json.dumps(blocks, separators=(",", ":"))}


def _ids(df) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


@pytest.mark.parametrize("variant", ["replicated", "cube-key", "pre-0.6"])
def test_every_generation_samples_the_same_rows(spark, original, tmp_path, variant):
    path = _rewrite_tags(original, tmp_path / variant, variant)
    reference = QbeastTable.for_path(spark, original)
    table = QbeastTable.for_path(spark, path)
    for fraction in (0.05, 0.3):
        assert _ids(table.sample(fraction)) == _ids(reference.sample(fraction))
        plan, reference_plan = table.read_plan(fraction=fraction), reference.read_plan(fraction=fraction)
        names = sorted(Path(p).name for p in plan.paths)
        if variant == "pre-0.6":
            assert len(names) == plan.total_files  # plain Delta until upgraded
        else:
            assert names == sorted(Path(p).name for p in reference_plan.paths)
            if fraction < 0.1:
                assert len(names) < plan.total_files
    condition = "a BETWEEN 10 AND 60 AND b < 0.3"
    assert _ids(table.to_df(filter=condition)) == _ids(reference.to_df().filter(condition))
