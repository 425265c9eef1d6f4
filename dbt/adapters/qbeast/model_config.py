"""The ``config(...)`` of a model materialized as ``qbeast``, checked before anything is written.

The engine validates the index specification again against the data (types, revisions); checking
the shape here first gives a dbt error that names the model, before Spark runs the model's query.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from qbeast import TRANSFORMER_TYPES, InvalidOptionError, parse_columns_to_index

from dbt.adapters.qbeast.errors import QbeastModelConfigError

WRITE_MODES: Tuple[str, ...] = ("overwrite", "append")
#: What later runs of a qbeast model do when the model sets no write_mode: append, like an
#: incremental model (the first run and --full-refresh always overwrite).
DEFAULT_WRITE_MODE = "append"
ON_SCHEMA_CHANGE: Tuple[str, ...] = ("ignore", "fail", "append_new_columns")

# Every config key the qbeast materialization reads (docs/dbt.md has the reference table).
QBEAST_KEYS: Tuple[str, ...] = (
    "columns_to_index",
    "cube_size",
    "write_mode",
    "location_root",
    "column_stats",
    "on_schema_change",
    "tblproperties",
    "persist_docs",
    "optimize_after_run",
)
# qbeast-spark's option spellings, accepted so configs can be copied from Spark jobs.
ALIASES: Dict[str, str] = {
    "columnsToIndex": "columns_to_index",
    "cubeSize": "cube_size",
    "columnStats": "column_stats",
}


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
    column_stats: Optional[Any] = None
    on_schema_change: str = "ignore"
    tblproperties: Dict[str, str] = field(default_factory=dict)
    table_comment: Optional[str] = None
    column_comments: Dict[str, str] = field(default_factory=dict)
    optimize_after_run: bool = False

    @property
    def column_names(self) -> List[str]:
        return [spec.name for spec in parse_columns_to_index(list(self.columns_to_index))]

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
    """The engine's parse of ``columns_to_index`` (``qbeast.parse_columns_to_index``), with errors
    that name the model; plus dbt's rule that names differing only in case are one column."""
    allowed = (
        "a non-empty list (or comma-separated string) of column names, each optionally "
        f"suffixed with ':' and one of {', '.join(TRANSFORMER_TYPES)}"
    )
    if not isinstance(value, (str, list, tuple)):
        raise _error(model, "columns_to_index", value, allowed)
    try:
        specs = parse_columns_to_index(value)
    except InvalidOptionError as exc:
        raise _error(model, "columns_to_index", value, f"{allowed} ({exc})") from None
    lowered = [spec.name.lower() for spec in specs]
    if len(set(lowered)) != len(lowered):
        raise _error(model, "columns_to_index", value, "each column at most once")
    return tuple(spec.text for spec in specs)


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
    mode = DEFAULT_WRITE_MODE if write_mode is None else str(write_mode).strip().lower()
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


def _bool(model: str, option: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _error(model, option, value, "true, false")
    return value


def _column_stats(model: str, value: Any) -> Optional[Any]:
    """A dict, or a JSON object string, of per-column bounds; the engine checks its content."""
    allowed = "a dict (or JSON object string) like {'price_min': 0, 'price_max': 100}"
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise _error(model, "column_stats", value, allowed) from None
        if not isinstance(parsed, dict):
            raise _error(model, "column_stats", value, allowed)
        return value
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _error(model, "column_stats", value, allowed)
    return dict(value)


def _tblproperties(model: str, value: Any) -> Dict[str, str]:
    allowed = "a dict of property names to string, number or boolean values"
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _error(model, "tblproperties", value, allowed)
    properties: Dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip() or isinstance(item, (dict, list, tuple)) or item is None:
            raise _error(model, "tblproperties", value, allowed)
        properties[key.strip()] = str(item).lower() if isinstance(item, bool) else str(item)
    return properties


def _persist_docs(model: str, value: Any) -> Tuple[bool, bool]:
    """(relation, columns) flags of dbt's ``persist_docs`` config."""
    allowed = "a dict with optional boolean keys relation and columns"
    if value is None:
        return False, False
    if not isinstance(value, Mapping) or set(value) - {"relation", "columns"}:
        raise _error(model, "persist_docs", value, allowed)
    return _bool(model, "persist_docs.relation", value.get("relation")), _bool(
        model, "persist_docs.columns", value.get("columns")
    )


def _standard_keys() -> frozenset:
    """Config keys dbt and dbt-spark define themselves: never reported as qbeast typos."""
    keys = {"post-hook", "pre-hook", "file_format", "partition_by", "clustered_by", "buckets",
            "options", "merge_update_columns", "location_root"}
    try:
        from dbt.artifacts.resources.v1.model import ModelConfig

        keys.update(ModelConfig.__dataclass_fields__)
    except ImportError:  # pragma: no cover - dbt-core absent: the adapter used as a library
        pass
    return frozenset(keys)


def _squash(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def check_unknown_keys(model: str, config: Mapping[str, Any]) -> None:
    """Reject config keys that look like a misspelled qbeast option.

    dbt lets users add any key to a model's config (for their own macros), so only keys that are
    not dbt's own and that come close to a qbeast option (e.g. ``colums_to_index``,
    ``cube_sise``, ``CubeSize``) are errors; the message lists every valid qbeast key.
    """
    spellings = {_squash(key): key for key in QBEAST_KEYS}  # aliases squash the same
    standard = _standard_keys()
    for key in config:
        if not isinstance(key, str) or key in QBEAST_KEYS or key in ALIASES or key in standard:
            continue
        close = difflib.get_close_matches(_squash(key), list(spellings), n=1, cutoff=0.8)
        if close:
            raise QbeastModelConfigError(
                f"model {model}: unknown config key {key!r} (did you mean "
                f"{spellings[close[0]]!r}?); valid qbeast keys: {', '.join(QBEAST_KEYS)} "
                f"(aliases: {', '.join(ALIASES)})"
            )


def _resolve_aliases(model: str, config: Mapping[str, Any]) -> Dict[str, Any]:
    """The config with qbeast-spark spellings renamed; both spellings at once is an error."""
    resolved = dict(config)
    for alias, key in ALIASES.items():
        if alias not in resolved:
            continue
        value = resolved.pop(alias)
        if resolved.get(key) is not None:
            raise QbeastModelConfigError(
                f"model {model}: config sets both {key} and its alias {alias}; allowed values: "
                "one of the two"
            )
        resolved[key] = value
    return resolved


def model_config_from_node(node: Mapping[str, Any]) -> QbeastModelConfig:
    """Validated qbeast settings of a dbt model node (its ``config``, description and columns)."""
    model = str(node.get("name"))
    config = node.get("config") or {}
    check_unknown_keys(model, config)
    config = _resolve_aliases(model, config)
    on_schema_change = str(config.get("on_schema_change") or "ignore").strip().lower()
    if on_schema_change not in ON_SCHEMA_CHANGE:
        raise _error(model, "on_schema_change", config.get("on_schema_change"), ", ".join(ON_SCHEMA_CHANGE))
    persist_relation, persist_columns = _persist_docs(model, config.get("persist_docs"))
    description = node.get("description") or None
    columns = node.get("columns") or {}
    column_comments = {
        str(column.get("name") or name): column["description"]
        for name, column in columns.items()
        if isinstance(column, Mapping) and column.get("description")
    }
    base = parse_model_config(
        model,
        config.get("columns_to_index"),
        config.get("cube_size"),
        config.get("write_mode"),
        config.get("location_root"),
    )
    return QbeastModelConfig(
        model=base.model,
        columns_to_index=base.columns_to_index,
        cube_size=base.cube_size,
        write_mode=base.write_mode,
        location_root=base.location_root,
        column_stats=_column_stats(model, config.get("column_stats")),
        on_schema_change=on_schema_change,
        tblproperties=_tblproperties(model, config.get("tblproperties")),
        table_comment=description if persist_relation else None,
        column_comments=column_comments if persist_columns else {},
        optimize_after_run=_bool(model, "optimize_after_run", config.get("optimize_after_run")),
    )
