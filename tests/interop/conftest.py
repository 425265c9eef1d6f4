"""Fixtures for tests that check tables against independent Delta implementations.

``duckdb_delta`` is a DuckDB connection with the ``delta`` extension loaded from the
``duckdb-extension-delta`` wheel (no network): ``duckdb_delta.execute("SELECT * FROM
delta_scan('<path>')")``. Plain helper functions live in ``delta_interop_helpers.py`` next to
this file (importable from test modules of this folder).
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def duckdb_delta_extension_path() -> Path:
    """The ``delta.duckdb_extension`` file shipped in the wheel matching the installed duckdb."""
    import importlib.resources

    import duckdb

    root = Path(str(importlib.resources.files("duckdb_extension_delta"))) / "extensions"
    exact = root / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(root.glob("*/delta.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"no delta.duckdb_extension below {root}")
    return found[-1]


@pytest.fixture(scope="session")
def duckdb_delta() -> Iterator[object]:
    """A DuckDB connection that can ``delta_scan`` tables (shared by the session)."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is a test dependency of the interop suite")
    pytest.importorskip("duckdb_extension_delta", reason="the duckdb delta extension wheel is needed")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{duckdb_delta_extension_path()}'")
    yield con
    con.close()
