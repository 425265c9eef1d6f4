"""Fixtures of the transaction log unit tests (helpers live in delta_helpers.py)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Test modules import their plain helper functions from delta_helpers.py next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from delta_helpers import SCHEMA, make_add  # noqa: E402

from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog


@pytest.fixture
def new_table(tmp_path: Path) -> Callable[..., DeltaLog]:
    """Factory: a table at version 0 (one file ``a.parquet``) committed by this layer."""

    def create(name: str = "t", configuration: dict[str, str] | None = None,
               partition_columns: tuple[str, ...] = ()) -> DeltaLog:
        log = DeltaLog.for_path(str(tmp_path / name))
        tx = log.start_transaction()
        tx.update_metadata(Metadata.create(SCHEMA, partition_columns, configuration))
        tx.add_actions(make_add("a.parquet"))
        assert tx.commit("CREATE TABLE") == 0
        return log

    return create
