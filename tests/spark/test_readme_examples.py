"""The README's Python examples run as written (paths moved into a temporary folder).

Running the documentation keeps it honest: a renamed method or argument fails here. The
assertions then check that the examples did what the README says they do.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from qbeast.core.weight_bands import band_of
from qbeast.index.thresholds import is_laid_out
from qbeast.snapshot import QbeastSnapshot

pytestmark = pytest.mark.spark

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_the_engine_examples() -> None:
    blocks = _python_blocks()
    assert len(blocks) >= 2
    assert "qbeast.write(" in blocks[0] and any("table.optimize()" in b for b in blocks[1:])
    assert any("qbeast.CommitProperties(" in b for b in blocks)


@pytest.mark.objectstore
def test_readme_python_examples_run(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    s3_environment: str) -> None:
    """Every block, in order, in one namespace; the S3 example against the test's S3-compatible
    server, reached through the environment variables the README names."""
    import uuid

    from s3_server import BUCKET

    bucket_root = f"s3://{BUCKET}/readme-{uuid.uuid4().hex[:8]}"
    namespace: dict = {}
    for block in _python_blocks():
        code = block.replace("/tmp/qbeast", str(tmp_path)).replace("s3://my-bucket", bucket_root)
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own documentation
    printed = capsys.readouterr().out

    result = namespace["result"]
    assert result.rows == 200_000 and result.revision_id == 1
    sample = namespace["sample"]
    table = namespace["table"]
    assert 0.09 * 200_000 < sample.count() < 0.11 * 200_000
    assert len(sample.inputFiles()) < len(table.to_df().inputFiles())
    pruned = namespace["pruned"].collect()
    assert pruned and all(r.user_id < 1000 and 10 <= r.price <= 20 for r in pruned)

    # the approximate answer: every estimate within 5%, from a sample, covering the exact value
    approx = {r["aggregate"]: r for r in namespace["approx"].collect()}
    assert set(approx) == {"count(*)", "sum(price)", "avg(price)"}
    assert all(r["tolerance_met"] and r["fraction"] < 1 for r in approx.values())
    assert approx["count(*)"]["low"] <= 200_000 <= approx["count(*)"]["high"]

    # the commit-properties example: recorded once, the second call with the same version skipped
    events_log = QbeastSnapshot.load(str(tmp_path / "events")).delta
    assert events_log.txn_version("loader") == 42
    assert "\nTrue\n" in printed

    # after optimize the latest revision is laid out: one block per cube and weight band
    status = QbeastSnapshot.load(str(tmp_path / "events")).index_status()
    assert is_laid_out(status)
    assert all(len(cube.blocks) == len({band_of(fb.block.min_weight) for fb in cube.blocks}) for cube in status)
    assert "OTree index metrics" in printed
    assert "index boxes:   revision 1:" in printed and "\ntotal:         files " in printed
    page = (tmp_path / "events.html").read_text()
    assert 'id="qbeast-data"' in page and '"fraction":0.1' in page
    assert "\njvm\n" in printed, "the README's session reads SQL through the JVM read bridge"

    # the S3 example: a Qbeast table in the bucket, sampled and filtered like a local one
    from qbeast.delta.log import DeltaLog

    clicks = namespace["clicks"]
    assert clicks.path.startswith(bucket_root) and DeltaLog.for_path(clicks.path).latest_version() == 0
    assert clicks.indexed_columns() == ["id", "user_id"]
    assert f"\n{clicks.sample(0.1).count()} 1000\n" in printed

    # the converted parquet folder ended fully indexed into revision 1
    converted = QbeastSnapshot.load(str(tmp_path / "plain_events"))
    assert converted.latest_revision_id == 1
    assert converted.staging_files() == []
    assert sum(c.element_count for c in converted.index_status()) == 200_000

    # delete, update, merge, delete_insert, replace_where on the users table: 11 rows of country 0
    # deleted, 1 inserted; then the 11 rows of country 2 replaced by the one upsert of country 2
    users = {r.id: r.status for r in namespace["users_table"].to_df().collect()}
    country_2 = [i for i in range(1000) if i % 97 == 2]
    assert len(country_2) == 11
    assert len(users) == 1000 - 11 + 1 - 11 and 0 not in users and users[5000] == "new"
    assert not set(country_2) & set(users)
    assert users[5] == "gone" and all(users[i] == "vip" for i in range(1, 10) if i not in (2, 5))
    assert "1 updated, 1 inserted" in printed
    # delete_insert of the same rows: ids 5 and 5000 deleted and inserted again, one commit each
    history = namespace["users_table"].history(limit=2)
    assert [h.operation for h in history] == ["REPLACE_WHERE", "DELETE_INSERT"]
