"""``qbeast describe`` by catalog name (the names file the dbt adapter keeps) and in a pipe."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path


from delta_helpers import SCHEMA, make_add
from qbeast import names
from qbeast.cli import main
from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _table(path: Path, files: int = 1) -> str:
    log = DeltaLog.for_path(str(path))
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA))
    tx.add_actions([make_add(f"part-{i:05d}.parquet", 2) for i in range(files)])
    tx.commit("CREATE TABLE")
    return log.table_path


def test_describe_by_catalog_name_from_the_dbt_project(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "proj"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: p\n")
    events = _table(tmp_path / "lake" / "events")
    clicks = _table(tmp_path / "lake" / "clicks")
    names.record(project / ".qbeast", "analytics.events", events)
    names.record(project / ".qbeast", "Staging.Clicks", clicks)
    names.record(project / ".qbeast", "raw.clicks", clicks)

    monkeypatch.chdir(project / "models")  # found from a sub-folder of the project
    code, out, err = _run("describe", "analytics.events", "--json")
    assert code == 0, err
    assert json.loads(out)["path"] == events
    code, out, _ = _run("describe", "events")  # a table name unique across schemas
    assert code == 0 and f"Table:      {events}" in out
    code, _, err = _run("describe", "clicks")
    assert code == 2 and "'clicks' is ambiguous; allowed values: raw.clicks, staging.clicks" in err
    code, _, err = _run("describe", "analytics.nope")
    assert code == 2 and "no Qbeast table named 'analytics.nope'" in err and "analytics.events" in err

    names.forget(project / ".qbeast", "analytics.events")
    assert "analytics.events" not in names.known(project / ".qbeast")
    monkeypatch.chdir(tmp_path)  # outside any dbt project: --catalog-dir names the catalog
    code, out, _ = _run("describe", "staging.clicks", "--catalog-dir", str(project / ".qbeast"))
    assert code == 0 and f"Table:      {clicks}" in out
    code, _, err = _run("describe", "staging.clicks")
    assert code == 2 and "neither a table folder nor a catalog name" in err


def test_describe_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    table = _table(tmp_path / "wide", files=3000)  # far more output than a pipe buffer holds
    script = Path(sys.executable).with_name("qbeast")
    result = subprocess.run(f"'{script}' describe '{table}' --files | head -n 2", shell=True,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.stdout.splitlines()[0] == f"Table:      {table}"
    assert result.stderr == ""  # no BrokenPipeError trace
