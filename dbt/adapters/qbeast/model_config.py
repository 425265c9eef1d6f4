"""The ``config(...)`` of a model materialized as ``qbeast``, checked before anything is written.

Every key a user can set on a qbeast model either works or fails here with an error that names the
model, the key and the allowed values. ``config_keys`` first decides which keys may be set at all
(dbt keys the materialization cannot honour, Databricks keys, look-alikes of qbeast options are
refused); this module parses the values of the accepted ones into a :class:`QbeastModelConfig`.
The engine validates the index specification again against the data (types, revisions).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from qbeast import TRANSFORMER_TYPES, InvalidOptionError, parse_columns_to_index, parse_skipping_indexes

from dbt.adapters.qbeast.config_keys import (
    check_unknown_keys, check_unsupported_keys, is_set, keys_for_spelling, qbeast_spelling,
    resolve_aliases,
)
from dbt.adapters.qbeast.engine_errors import allowed_words
from dbt.adapters.qbeast.errors import QbeastModelConfigError

ON_SCHEMA_CHANGE: Tuple[str, ...] = ("ignore", "fail", "append_new_columns")
NON_FINITE: Tuple[str, ...] = ("fail", "null")

#: Incremental strategies of a qbeast model and the engine operation each one runs on an
#: incremental run (``QbeastAdapter.qbeast_write``): ``qbeast.write(mode='append')``,
#: ``QbeastTable.merge``, ``QbeastTable.delete_insert`` and, per batch of a microbatch model,
#: ``QbeastTable.replace_where`` over the batch's window. A model without
#: ``incremental_strategy`` rebuilds its table on every run (one overwrite commit), like ``table``.
INCREMENTAL_STRATEGIES: Dict[str, str] = {
    "append": "append", "merge": "merge", "delete+insert": "delete_insert",
    "microbatch": "replace_where",
}
#: Strategies that match the new rows to the table's by ``unique_key`` (required for them).
KEYED_STRATEGIES: Tuple[str, ...] = ("merge", "delete+insert")
#: dbt's alias of the target table in merge predicates (``DBT_INTERNAL_DEST.col``).
TARGET_ALIAS = "dbt_internal_dest"

#: Deprecated: ``write_mode`` was the qbeast models' own word for what dbt calls an incremental
#: strategy. Still read (with a warning) so existing projects keep their behaviour.
DEPRECATED_WRITE_MODE = {"append": "append", "overwrite": None}


@dataclass(frozen=True)
class QbeastModelConfig:
    """Validated settings of one qbeast model.

    ``columns_to_index`` keeps the engine's spec syntax (``"col"`` or ``"col:type"``).
    ``cube_size`` None means: the engine's default for a new table, the table's own on append.
    ``incremental_strategy`` None means: rebuild the table on every run.
    ``unique_key`` is empty unless the strategy is ``merge`` or ``delete+insert`` (then it is
    required); ``incremental_predicates`` are SQL conditions on the table's columns that limit
    the rows a merge can match or a delete+insert can delete; ``merge_update_columns`` /
    ``merge_exclude_columns`` pick the columns a merge updates.
    ``event_time`` is the column a ``microbatch`` model's batches replace by time window.
    ``warnings`` are notes the materialization prints (dbt ``warn``).
    """

    model: str
    columns_to_index: Tuple[str, ...]
    cube_size: Optional[int]
    location_root: Optional[str]
    incremental_strategy: Optional[str] = None
    take_over_location: bool = False
    column_stats: Optional[Any] = None
    non_finite: str = "fail"
    #: ``{'order_id': 'fuse', 'status': 'values'}``: the table's skipping indexes (None: keep
    #: the table's declaration), docs/skipping.md
    skipping_indexes: Optional[Dict[str, Any]] = None
    on_schema_change: str = "ignore"
    tblproperties: Dict[str, str] = field(default_factory=dict)
    table_comment: Optional[str] = None
    column_comments: Dict[str, str] = field(default_factory=dict)
    #: on by default: the engine's tiered maintenance (at most MAINTENANCE_REWRITE_RATIO bytes
    #: rewritten per byte appended; nothing after a full write), docs/dbt.md
    optimize_after_run: bool = True
    unique_key: Tuple[str, ...] = ()
    incremental_predicates: Tuple[str, ...] = ()
    merge_update_columns: Optional[Tuple[str, ...]] = None
    merge_exclude_columns: Optional[Tuple[str, ...]] = None
    event_time: Optional[str] = None
    warnings: Tuple[str, ...] = ()

    @property
    def column_names(self) -> List[str]:
        return [spec.name for spec in parse_columns_to_index(list(self.columns_to_index))]

    @property
    def is_incremental(self) -> bool:
        """True when later runs change the existing table instead of rebuilding it."""
        return self.incremental_strategy is not None

    def write_mode(self, incremental_run: bool) -> str:
        """The engine write mode of this run: the strategy's on an incremental run, else overwrite."""
        if incremental_run and self.incremental_strategy is not None:
            return INCREMENTAL_STRATEGIES[self.incremental_strategy]
        return "overwrite"

    @property
    def target_predicate(self) -> Optional[str]:
        """The ``incremental_predicates`` as one condition on the table's columns (or None)."""
        if not self.incremental_predicates:
            return None
        return " and ".join(f"({p})" for p in self.incremental_predicates)

    def check_columns_exist(self, available: Sequence[str], keyed_run: bool = False) -> None:
        """Every indexed column must be an output column of the model (Spark names: no case);
        on a merge or delete+insert run (``keyed_run``) every ``unique_key`` and merge column
        too (as in dbt, the first run and a full refresh do not use them)."""
        known = {name.lower() for name in available}
        checked: List[Tuple[str, Sequence[str]]] = [("columns_to_index", self.column_names)]
        if self.event_time is not None:
            checked.append(("event_time", [self.event_time]))
        if keyed_run:
            checked += [("unique_key", self.unique_key),
                        ("merge_update_columns", self.merge_update_columns or ()),
                        ("merge_exclude_columns", self.merge_exclude_columns or ())]
        for option, names in checked:
            missing = [name for name in names if name.lower() not in known]
            if missing:
                raise QbeastModelConfigError(
                    f"model {self.model}: {option} names {', '.join(missing)}, which the "
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
    except InvalidOptionError as exc:  # worded from its fields: the engine's option names stay out
        detail = allowed_words(exc.allowed) if exc.allowed is not None else str(exc)
        raise _error(model, "columns_to_index", value, f"{allowed} ({detail})") from None
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


def _strategy(model: str, strategy: Any, write_mode: Any) -> Tuple[Optional[str], Tuple[str, ...]]:
    """The incremental strategy (None = rebuild) from ``incremental_strategy`` or ``write_mode``."""
    allowed = ", ".join(INCREMENTAL_STRATEGIES) + " (or leave it out to rebuild the table on every run)"
    chosen: Optional[str] = None
    if strategy is not None:
        chosen = str(strategy).strip().lower()
        if chosen not in INCREMENTAL_STRATEGIES:
            raise _error(model, "incremental_strategy", strategy, allowed)
    if write_mode is None:
        return chosen, ()
    mode = str(write_mode).strip().lower()
    if mode not in DEPRECATED_WRITE_MODE:
        raise _error(model, "write_mode", write_mode,
                     "append, overwrite (deprecated: use incremental_strategy='append', or leave "
                     "it out to rebuild the table on every run)")
    implied = DEPRECATED_WRITE_MODE[mode]
    if strategy is not None and implied != chosen:
        raise QbeastModelConfigError(
            f"model {model}: config sets incremental_strategy={strategy!r} and the deprecated "
            f"write_mode={write_mode!r}, which disagree; allowed values: incremental_strategy "
            "alone (remove write_mode)"
        )
    replacement = ("incremental_strategy='append'" if implied
                   else "nothing: a qbeast model without incremental_strategy rebuilds its table on every run")
    note = (f"model {model}: config write_mode={write_mode!r} is deprecated; use {replacement} "
            "(docs/dbt.md, 'Rebuild or increment')")
    return implied, (note,)


def parse_model_config(
    model: str,
    columns_to_index: Any,
    cube_size: Any = None,
    location_root: Any = None,
    incremental_strategy: Any = None,
    write_mode: Any = None,
) -> QbeastModelConfig:
    """Check a qbeast model's index, location and strategy values and return them normalized."""
    if columns_to_index is None:
        raise QbeastModelConfigError(
            f"model {model}: the qbeast materialization needs config columns_to_index; allowed "
            f"values: a list of the model's column names, e.g. ['event_time', 'user_id']"
        )
    strategy, warnings = _strategy(model, incremental_strategy, write_mode)
    if location_root is not None and (not isinstance(location_root, str) or not location_root.strip()):
        raise _error(model, "location_root", location_root, "a folder path or URI")
    return QbeastModelConfig(
        model=model,
        columns_to_index=_index_specs(model, columns_to_index),
        cube_size=_cube_size(model, cube_size),
        location_root=location_root.strip() if location_root else None,
        incremental_strategy=strategy,
        warnings=warnings,
    )


def _names(model: str, option: str, value: Any, allowed: str) -> Tuple[str, ...]:
    """A column name or a list of them as a tuple (each once, dbt's case-insensitive names);
    None, '' and [] are the empty tuple."""
    if value is None or value == "" or value == []:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in items):
        raise _error(model, option, value, allowed)
    names: List[str] = []
    for item in items:
        if item.strip().lower() not in {n.lower() for n in names}:
            names.append(item.strip())
    return tuple(names)


def _target_predicates(model: str, value: Any) -> Tuple[str, ...]:
    """``incremental_predicates`` as conditions on the table's columns.

    dbt's merge writes them against the alias ``DBT_INTERNAL_DEST`` (delete+insert against the
    bare table); the engine applies them to the target's rows, so the alias is dropped. A
    condition on ``DBT_INTERNAL_SOURCE`` has no place in the engine's operation: refused.
    """
    import re

    allowed = ("a list of SQL conditions on the table's columns, e.g. "
               "['event_date >= date_sub(current_date(), 7)']")
    predicates = _names(model, "incremental_predicates", value, allowed)
    out = []
    for predicate in predicates:
        if re.search(r"\bdbt_internal_source\b", predicate, flags=re.IGNORECASE):
            raise _error(model, "incremental_predicates", value,
                         allowed + " (a qbeast merge applies them to the table's rows only, so "
                         "they cannot name DBT_INTERNAL_SOURCE)")
        out.append(re.sub(rf"\b{TARGET_ALIAS}\s*\.\s*", "", predicate, flags=re.IGNORECASE))
    return tuple(out)


@dataclass(frozen=True)
class _KeyedOptions:
    """The options of the keyed strategies, checked against the model's strategy."""

    unique_key: Tuple[str, ...] = ()
    incremental_predicates: Tuple[str, ...] = ()
    merge_update_columns: Optional[Tuple[str, ...]] = None
    merge_exclude_columns: Optional[Tuple[str, ...]] = None


def _keyed_options(model: str, strategy: Optional[str], config: Mapping[str, Any]) -> _KeyedOptions:
    """``unique_key``, ``incremental_predicates`` (or dbt's older ``predicates``) and the merge
    column lists: required or refused depending on the strategy, never silently ignored."""
    columns = "a column name or a list of column names of the model"
    key = _names(model, "unique_key", config.get("unique_key"), columns)
    keyed = " or ".join(repr(s) for s in KEYED_STRATEGIES)
    shown = repr(strategy) if strategy else "none (rebuild on every run)"
    if strategy in KEYED_STRATEGIES and not key:
        raise QbeastModelConfigError(
            f"model {model}: incremental_strategy={strategy!r} needs config unique_key; allowed "
            f"values: {columns} (or incremental_strategy='append' to add the rows as they come)"
        )
    if key and strategy not in KEYED_STRATEGIES:
        raise QbeastModelConfigError(
            f"model {model}: config unique_key={config.get('unique_key')!r} needs "
            f"incremental_strategy={keyed} (this model's strategy is {shown}); allowed values "
            f"for incremental_strategy: {', '.join(INCREMENTAL_STRATEGIES)}"
        )
    option = "incremental_predicates" if is_set(config.get("incremental_predicates")) else "predicates"
    predicates = _target_predicates(model, config.get(option))
    if predicates and strategy not in KEYED_STRATEGIES:
        raise QbeastModelConfigError(
            f"model {model}: config {option} needs incremental_strategy={keyed} (this model's "
            f"strategy is {shown})"
        )
    lists = {}
    for option in ("merge_update_columns", "merge_exclude_columns"):
        value = config.get(option)
        if not is_set(value):
            continue
        if strategy != "merge":
            raise QbeastModelConfigError(
                f"model {model}: config {option} needs incremental_strategy='merge' (this "
                f"model's strategy is {shown})"
            )
        lists[option] = _names(model, option, value, "a list of column names of the model")
    if len(lists) == 2:
        raise QbeastModelConfigError(
            f"model {model}: config sets both merge_update_columns and merge_exclude_columns; "
            "allowed values: one of the two"
        )
    return _KeyedOptions(key, predicates, lists.get("merge_update_columns"),
                         lists.get("merge_exclude_columns"))


def _bool(model: str, option: str, value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _error(model, option, value, "true, false")
    return value


def _choice(model: str, option: str, value: Any, default: str, allowed: Sequence[str]) -> str:
    chosen = default if value is None else str(value).strip().lower()
    if chosen not in allowed:
        raise _error(model, option, value, ", ".join(allowed))
    return chosen


def _skipping_indexes(model: str, value: Any) -> Optional[Dict[str, Any]]:
    """A dict (or JSON object string) of column -> ``'values'`` / ``'fuse'`` / ``'bloom'`` (or a
    dict with ``kind`` and its parameter); the engine checks the columns against the model's
    output."""
    allowed = ("a dict of column -> 'values', 'fuse' or 'bloom', e.g. {'order_id': 'fuse', "
               "'status': 'values'}")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise _error(model, "skipping_indexes", value, allowed) from None
    try:
        parse_skipping_indexes(value)
    except InvalidOptionError as exc:
        raise _error(model, "skipping_indexes", value, f"{allowed} ({exc})") from None
    return dict(value)


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


def model_config_from_node(node: Mapping[str, Any]) -> QbeastModelConfig:
    """Validated qbeast settings of a dbt model node (its ``config``, description and columns)."""
    if not isinstance(node, Mapping) and hasattr(node, "to_dict"):
        node = node.to_dict()
    model = str(node.get("name"))
    config = node.get("config") or {}
    check_unknown_keys(model, config)
    check_unsupported_keys(model, config, str(node.get("language") or "sql"))
    config = resolve_aliases(model, config)
    spelling = qbeast_spelling(config)
    config = keys_for_spelling(config)
    if spelling == "incremental" and not is_set(config.get("incremental_strategy")):
        # dbt's default for an incremental model: upsert by its key, else add the rows
        has_key = bool(_names(model, "unique_key", config.get("unique_key"), "a column name or a list"))
        config = {**config, "incremental_strategy": "merge" if has_key else "append"}
    on_schema_change = _choice(model, "on_schema_change", config.get("on_schema_change"), "ignore",
                               ON_SCHEMA_CHANGE)
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
        config.get("location_root"),
        config.get("incremental_strategy"),
        config.get("write_mode"),
    )
    warnings = base.warnings
    event_time: Optional[str] = None
    if base.incremental_strategy == "microbatch":
        event_time, config, notes = _microbatch_options(model, spelling, config)
        warnings += notes
    keyed = _keyed_options(model, base.incremental_strategy, config)
    return QbeastModelConfig(
        model=base.model,
        columns_to_index=base.columns_to_index,
        cube_size=base.cube_size,
        location_root=base.location_root,
        incremental_strategy=base.incremental_strategy,
        take_over_location=_bool(model, "take_over_location", config.get("take_over_location")),
        column_stats=_column_stats(model, config.get("column_stats")),
        non_finite=_choice(model, "non_finite", config.get("non_finite"), "fail", NON_FINITE),
        skipping_indexes=_skipping_indexes(model, config.get("skipping_indexes")),
        on_schema_change=on_schema_change,
        tblproperties=_tblproperties(model, config.get("tblproperties")),
        table_comment=description if persist_relation else None,
        column_comments=column_comments if persist_columns else {},
        optimize_after_run=_bool(model, "optimize_after_run", config.get("optimize_after_run"),
                                 default=True),
        unique_key=keyed.unique_key,
        incremental_predicates=keyed.incremental_predicates,
        merge_update_columns=keyed.merge_update_columns,
        merge_exclude_columns=keyed.merge_exclude_columns,
        event_time=event_time,
        warnings=warnings,
    )


def _microbatch_options(model: str, spelling: Optional[str], config: Mapping[str, Any]
                        ) -> Tuple[str, Mapping[str, Any], Tuple[str, ...]]:
    """(event_time, the config without the keys microbatch does not use, notes) of a microbatch
    model. dbt runs a model in batches only when it is ``materialized='incremental'``, so a
    ``materialized='qbeast'`` model with this strategy would silently run as one batch over
    everything: refused with the spelling that works. ``unique_key`` plays no part (each batch
    replaces its window), as in dbt's other adapters: accepted, with a note."""
    if spelling != "incremental":
        raise QbeastModelConfigError(
            f"model {model}: incremental_strategy='microbatch' needs materialized='incremental' "
            "with file_format='qbeast' (dbt runs batches only for incremental models); allowed "
            f"values for materialized with microbatch: incremental (this model: {spelling!r})"
        )
    event_time = config.get("event_time")
    if not isinstance(event_time, str) or not event_time.strip():
        raise _error(model, "event_time", event_time,
                     "the name of the model's event time column (microbatch replaces each "
                     "batch's window of it)")
    notes: Tuple[str, ...] = ()
    if is_set(config.get("unique_key")):
        notes = (f"model {model}: unique_key={config.get('unique_key')!r} has no effect with "
                 "incremental_strategy='microbatch': each batch replaces every row of its "
                 f"{event_time.strip()} window",)
        config = {k: v for k, v in config.items() if k != "unique_key"}
    return event_time.strip(), config, notes


def snapshot_config_from_node(node: Mapping[str, Any]) -> QbeastModelConfig:
    """Validated qbeast settings of a snapshot: its index (``columns_to_index``, by default the
    snapshot's ``unique_key`` columns, which the snapshot merges look up), ``cube_size``,
    ``location_root`` and ``optimize_after_run`` (default true: a snapshot grows with every run,
    as an incremental model does). The strategy keys are dbt's own and dbt checks them."""
    if not isinstance(node, Mapping) and hasattr(node, "to_dict"):
        node = node.to_dict()
    name = str(node.get("name"))
    config = resolve_aliases(name, node.get("config") or {})
    columns = config.get("columns_to_index")
    if columns is None:
        import re

        key = config.get("unique_key")
        keys = [key] if isinstance(key, str) else list(key or [])
        if not keys or not all(isinstance(k, str) and re.fullmatch(r"\w+", k.strip()) for k in keys):
            raise QbeastModelConfigError(
                f"snapshot {name}: a qbeast snapshot needs config columns_to_index when its "
                f"unique_key ({key!r}) is not a column or a list of columns; allowed values: a "
                "list of the snapshot's column names, e.g. ['id']"
            )
        columns = [k.strip() for k in keys]
    parsed = parse_model_config(name, columns, config.get("cube_size"), config.get("location_root"))
    return replace(parsed, optimize_after_run=_bool(name, "optimize_after_run",
                                                    config.get("optimize_after_run"), default=True))


def seed_config_from_node(node: Mapping[str, Any]) -> QbeastModelConfig:
    """Validated qbeast settings of a seed with ``file_format='qbeast'``: its index
    (``columns_to_index``, required: a seed has no key to default to), ``cube_size`` and
    ``location_root``. A seed is rebuilt on every ``dbt seed``, so it is not maintained after."""
    if not isinstance(node, Mapping) and hasattr(node, "to_dict"):
        node = node.to_dict()
    name = str(node.get("name"))
    config = resolve_aliases(name, node.get("config") or {})
    if config.get("columns_to_index") is None:
        raise QbeastModelConfigError(
            f"seed {name}: a qbeast seed (file_format='qbeast') needs config columns_to_index; "
            "allowed values: a list of the seed's column names, e.g. ['id']")
    parsed = parse_model_config(name, config.get("columns_to_index"), config.get("cube_size"),
                                config.get("location_root"))
    return replace(parsed, optimize_after_run=False)
