"""Fixtures of the table-operation tests that need no Spark: small tables built with pyarrow
and this project's Delta log layer, plus copies of the qbeast-spark fixture logs."""
from __future__ import annotations

import importlib.util
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Test modules import plain helpers from operations_helpers.py next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from operations_helpers import SCHEMA, write_parquet  # noqa: E402

from qbeast.delta.actions import Metadata  # noqa: E402
from qbeast.delta.log import DeltaLog  # noqa: E402

@pytest.fixture
def make_table(tmp_path: Path) -> Callable[..., DeltaLog]:
    """Factory: a table whose files hold real rows and carry the given tags.

    ``files`` is a list of ``(rows, tags)``; everything is committed as version 0.
    """

    def create(files: list[tuple[range, dict[str, str] | None]],
               configuration: dict[str, str] | None = None, name: str = "t") -> DeltaLog:
        table = tmp_path / name
        log = DeltaLog.for_path(str(table))
        adds = []
        for rows, tags in files:
            add = write_parquet(table, rows)
            add.tags = tags
            adds.append(add)
        tx = log.start_transaction()
        tx.update_metadata(Metadata.create(SCHEMA, [], configuration or {}))
        tx.add_actions(adds)
        tx.commit("WRITE", {"mode": "Append"})
        return log

    return create


@pytest.fixture
def copy_fixture_log(qbeast_fixtures: Path, tmp_path: Path) -> Callable[[str], Path]:
    """Copy one qbeast-spark fixture's ``_delta_log`` into a writable table folder."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(qbeast_fixtures / name / "_delta_log", target / "_delta_log")
        for path in [target / "_delta_log", *(target / "_delta_log").iterdir()]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        return target

    return copy


def _load_interop_conftest():
    """The interop suite's conftest, loaded by path: its DuckDB fixture serves these tests too."""
    path = Path(__file__).resolve().parents[2] / "interop" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_qbeast_interop_conftest", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


#: ``duckdb_delta``: a DuckDB connection with the ``delta`` extension (defined by tests/interop).
duckdb_delta = _load_interop_conftest().duckdb_delta
