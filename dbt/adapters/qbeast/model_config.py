"""The ``config(...)`` of a model materialized as ``qbeast``, checked before anything is written.

The engine validates the index specification again against the data (types, revisions); checking
the shape here first gives a dbt error that names the model, before Spark runs the model's query.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from dbt.adapters.qbeast.errors import QbeastModelConfigError

TRANSFORMER_TYPES: Tuple[str, ...] = ("linear", "hashing", "quantiles", "histogram")
WRITE_MODES: Tuple[str, ...] = ("overwrite", "append")


@dataclass(frozen=True)
class QbeastModelConfig:
    """Validated settings of one qbeast model.

    ``columns_to_index`` keeps the engine's spec syntax (``"col"`` or ``"col:type"``).
    ``cube_size`` None means: the engine's default for a new table, the table's own on append.
    """

    model: str
    columns_to_index: Tuple[str, ...]
    cube_size: Optional[int]
    write_mode: str
    location_root: Optional[str]

    @property
    def column_names(self) -> List[str]:
        return [spec.split(":", 1)[0] for spec in self.columns_to_index]

    def check_columns_exist(self, available: Sequence[str]) -> None:
        """Every indexed column must be an output column of the model (Spark names: no case)."""
        known = {name.lower() for name in available}
        missing = [name for name in self.column_names if name.lower() not in known]
        if missing:
            raise QbeastModelConfigError(
                f"model {self.model}: columns_to_index names {', '.join(missing)}, which the "
                f"model's query does not return; allowed values: {', '.join(available)}"
            )


def _error(model: str, option: str, value: Any, allowed: str) -> QbeastModelConfigError:
    return QbeastModelConfigError(
        f"model {model}: invalid config {option}={value!r}; allowed values: {allowed}"
    )


def _index_specs(model: str, value: Any) -> Tuple[str, ...]:
    allowed = (
        "a non-empty list (or comma-separated string) of column names, each optionally "
        f"suffixed with ':' and one of {', '.join(TRANSFORMER_TYPES)}"
    )
    if isinstance(value, str):
        items: List[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise _error(model, "columns_to_index", value, allowed)
    specs: List[str] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise _error(model, "columns_to_index", value, allowed)
        name, _, kind = (part.strip() for part in item.strip().partition(":"))
        if not name or (kind and kind.lower() not in TRANSFORMER_TYPES) or (":" in item and not kind):
            raise _error(model, "columns_to_index", value, allowed)
        specs.append(f"{name}:{kind.lower()}" if kind else name)
    if not specs:
        raise _error(model, "columns_to_index", value, allowed)
    lowered = [spec.split(":", 1)[0].lower() for spec in specs]
    if len(set(lowered)) != len(lowered):
        raise _error(model, "columns_to_index", value, "each column at most once")
    return tuple(specs)


def _cube_size(model: str, value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _error(model, "cube_size", value, "a positive integer (rows per cube)")
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise _error(model, "cube_size", value, "a positive integer (rows per cube)") from None
    if size <= 0 or (isinstance(value, float) and value != size):
        raise _error(model, "cube_size", value, "a positive integer (rows per cube)")
    return size


def parse_model_config(
    model: str,
    columns_to_index: Any,
    cube_size: Any = None,
    write_mode: Any = None,
    location_root: Any = None,
) -> QbeastModelConfig:
    """Check a qbeast model's config values and return them normalized."""
    if columns_to_index is None:
        raise QbeastModelConfigError(
            f"model {model}: the qbeast materialization needs config columns_to_index; allowed "
            f"values: a list of the model's column names, e.g. ['event_time', 'user_id']"
        )
    mode = "overwrite" if write_mode is None else str(write_mode).strip().lower()
    if mode not in WRITE_MODES:
        raise _error(model, "write_mode", write_mode, ", ".join(WRITE_MODES))
    if location_root is not None and (not isinstance(location_root, str) or not location_root.strip()):
        raise _error(model, "location_root", location_root, "a folder path or URI")
    return QbeastModelConfig(
        model=model,
        columns_to_index=_index_specs(model, columns_to_index),
        cube_size=_cube_size(model, cube_size),
        write_mode=mode,
        location_root=location_root.strip() if location_root else None,
    )
