"""How an append meets the existing table's schema (``on_schema_change``).

The rules follow what dbt users know from incremental models:

- ``ignore`` (dbt's default): columns the table lacks are dropped from the appended rows, table
  columns the model no longer returns are written as nulls;
- ``fail``: any difference in the column sets fails the model before anything is written;
- ``append_new_columns``: new columns are added to the table (the engine's ``merge_schema``),
  older rows read them as nulls.

Type changes of existing columns are refused by the engine whatever the setting.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

from dbt.adapters.qbeast.errors import QbeastSchemaChangeError
from dbt.adapters.qbeast.model_config import ON_SCHEMA_CHANGE, QbeastModelConfig


def apply_schema_change(
    rows: Any, table_columns: Sequence[str], model_config: QbeastModelConfig
) -> Tuple[Any, bool]:
    """The rows to append (``rows``, an :class:`engines.ModelRows`, or only the table's columns
    of it) and whether the engine may add columns (``merge_schema``)."""
    table_by_lower = {name.lower(): name for name in table_columns}
    model_lower = {name.lower() for name in rows.columns}
    new: List[str] = [name for name in rows.columns if name.lower() not in table_by_lower]
    gone: List[str] = [name for name in table_columns if name.lower() not in model_lower]
    policy = model_config.on_schema_change
    if policy == "append_new_columns":
        return rows, bool(new)
    if policy == "fail":
        if new or gone:
            raise QbeastSchemaChangeError(
                f"model {model_config.model}: on_schema_change='fail' and the model's columns "
                f"differ from the table's (new: {', '.join(new) or 'none'}; missing: "
                f"{', '.join(gone) or 'none'}); allowed values for on_schema_change: "
                f"{', '.join(ON_SCHEMA_CHANGE)}, or run with --full-refresh"
            )
        return rows, False
    if not new:
        return rows, False
    kept = [(name, table_by_lower[name.lower()]) for name in rows.columns if name.lower() in table_by_lower]
    return rows.projected(kept), False
