"""``qbeast describe``: Delta facts, Qbeast revisions, files, time travel and error exits."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from delta_helpers import SCHEMA, make_add
from qbeast.cli import main
from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _raw_adds(table: Path) -> list[dict]:
    lines = (table / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    return [json.loads(x)["add"] for x in lines if x.startswith('{"add"')]


def test_describe_qbeast_spark_table(qbeast_fixtures: Path) -> None:
    table = qbeast_fixtures / "v07-ecommerce-300k"
    code, out, err = _run("describe", str(table), "--json")
    assert code == 0, err
    facts = json.loads(out)
    adds = _raw_adds(table)
    assert facts["version"] == 0 and facts["num_files"] == len(adds) == 16
    assert facts["num_rows"] == sum(json.loads(a["stats"])["numRecords"] for a in adds) == 300_000
    assert facts["size_bytes"] == sum(a["size"] for a in adds)
    assert [c["name"] for c in facts["schema"]][:3] == ["event_time", "event_type", "product_id"]
    assert facts["protocol"]["minReaderVersion"] == 1 and facts["protocol"]["minWriterVersion"] == 2
    q = facts["qbeast"]
    assert q["is_qbeast"] and q["latest_revision_id"] == 1 and not q["needs_upgrade"]
    staging, rev1 = q["revisions"]
    assert staging["id"] == 0 and staging["staging"] and staging["files"] == 0
    assert rev1["cube_size"] == 10000 and rev1["files"] == 16
    assert rev1["columns"] == [
        {"name": "user_id", "transformer": "linear", "data_type": "IntegerDataType"},
        {"name": "brand", "transformer": "histogram", "data_type": "StringDataType"},
    ]
    cubes = {b["cubeId"] for a in adds for b in json.loads(a["tags"]["blocks"])}
    assert rev1["cubes"] == len(cubes)

    code, text, _ = _run("describe", str(table))
    assert code == 0
    assert "Qbeast:     yes, latest revision 1" in text
    assert "columns: user_id:linear(IntegerDataType), brand:histogram(StringDataType)" in text
    assert f"files: 16, cubes: {len(cubes)}" in text and "Rows:       300000" in text


def test_describe_pre06_table_flags_upgrade(qbeast_fixtures: Path) -> None:
    code, out, _ = _run("describe", str(qbeast_fixtures / "pre06-logs-test-table"), "--json")
    assert code == 0
    assert json.loads(out)["qbeast"]["needs_upgrade"] is True


def test_describe_plain_delta_table_with_files_and_time_travel(tmp_path: Path) -> None:
    log = DeltaLog.for_path(str(tmp_path / "t"))
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, configuration={"owner": "me"}))
    tx.add_actions(make_add("a.parquet", 5, {"revision": "7", "blocks": "[]"}))
    tx.commit("CREATE TABLE")
    log.start_transaction().add_actions(make_add("b.parquet", 3)).commit("WRITE")

    code, out, _ = _run("describe", log.table_path, "--json", "--files")
    facts = json.loads(out)
    assert code == 0 and facts["version"] == 1 and facts["num_rows"] == 8
    assert facts["qbeast"] == {"is_qbeast": False} and facts["configuration"] == {"owner": "me"}
    files = {f["path"]: f for f in facts["files"]}
    assert files["a.parquet"]["tags"] == {"revision": "7", "blocks": "[]"}
    assert files["b.parquet"]["tags"] is None and files["b.parquet"]["rows"] == 3

    code, out, _ = _run("describe", log.table_path, "--version", "0", "--files")
    assert code == 0
    assert "Version:    0" in out and "Files:      1" in out and "Qbeast:     no" in out
    assert 'a.parquet  size=105 rows=5 tags={"revision":"7","blocks":"[]"}' in out


def test_errors_exit_with_code_two(tmp_path: Path) -> None:
    code, out, err = _run("describe", str(tmp_path))
    assert code == 2 and out == "" and "is not a Delta table" in err and "_delta_log" in err
    log = DeltaLog.for_path(str(tmp_path / "t"))
    log.start_transaction().update_metadata(Metadata.create(SCHEMA)).commit("CREATE TABLE")
    code, _, err = _run("describe", log.table_path, "--version", "5")
    assert code == 2 and "latest version is 0" in err
    (Path(log.log_path) / f"{1:020d}.json").write_text("{not json\n")
    code, _, err = _run("describe", log.table_path)
    assert code == 2 and "00000000000000000001.json line 1 is not valid JSON" in err
    (Path(log.log_path) / f"{1:020d}.json").unlink()
    (Path(log.log_path) / f"{1:020d}.json").mkdir()  # a commit "file" that cannot be read
    code, _, err = _run("describe", log.table_path)
    assert code == 2 and "cannot read" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["describe", log.table_path, "--version", "latest"])
    assert exit_info.value.code == 2


def test_console_script_is_installed(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("qbeast")
    assert script.exists(), "the package declares the console script qbeast = qbeast.cli:main"
    result = subprocess.run([str(script), "describe", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2 and "is not a Delta table" in result.stderr
