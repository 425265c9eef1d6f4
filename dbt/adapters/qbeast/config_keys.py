"""Which config keys a qbeast model may set: the policing of keys, apart from parsing values.

dbt lets a model carry any key, so a misspelled qbeast option would otherwise be ignored silently.
This module decides, per key and per spelling of the materialization, whether a key is the
qbeast materialization's own (``QBEAST_KEYS`` and qbeast-spark's ``ALIASES``), one of dbt's keys
the materialization cannot honour (refused with what to do instead), a Databricks key a Python
model would ignore, or an unknown key close enough to a qbeast option to be a typo. Parsing and
checking the values of the accepted keys is ``model_config``'s job.
"""
from __future__ import annotations

import difflib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from dbt.adapters.qbeast.errors import QbeastModelConfigError

#: The materializations a qbeast model can be spelled with: ``qbeast``, or dbt-spark's ``table``
#: and ``incremental`` with ``file_format='qbeast'``.
QBEAST_FILE_FORMAT = "qbeast"


# Every config key the qbeast materialization reads (docs/dbt.md has the reference table).
QBEAST_KEYS: Tuple[str, ...] = (
    "columns_to_index",
    "cube_size",
    "incremental_strategy",
    "unique_key",
    "incremental_predicates",
    "merge_update_columns",
    "merge_exclude_columns",
    "location_root",
    "take_over_location",
    "column_stats",
    "non_finite",
    "skipping_indexes",
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
    "skippingIndexes": "skipping_indexes",
}


#: Keys dbt or dbt-spark define that a qbeast model cannot honour: setting them (to anything but
#: their empty default) is an error rather than silently ignored. Value: what to do instead.
NOT_FOR_QBEAST: Dict[str, str] = {
    "partition_by": "a Qbeast table is laid out by its index; list the column in columns_to_index",
    "clustered_by": "a Qbeast table is laid out by its index; list the columns in columns_to_index",
    "buckets": "a Qbeast table is laid out by its index; list the columns in columns_to_index",
    "file_format": "a qbeast model is always a Qbeast (Delta) table; remove file_format for "
                   "qbeast models (set it per folder in dbt_project.yml if other models need it)",
    "options": "the qbeast engine takes no Spark data source options; use the qbeast keys",
    "grants": "the embedded Spark catalog has no access control, so grants cannot be applied",
}
#: dbt-spark's Python model keys for Databricks clusters: Python models run on the embedded
#: session here, so these would be ignored.
DATABRICKS_PYTHON_KEYS: Tuple[str, ...] = (
    "submission_method", "cluster_id", "http_path", "create_notebook", "job_cluster_config",
    "python_job_config", "user_folder_for_python", "timeout", "index_url", "access_control_list",
    "notebook_access_control_list", "environment_key", "environment_dependencies",
)
#: Words of qbeast (and of other engines' layout options) that make an unknown key look like a
#: qbeast option: ``cube=``, ``optimize=``, ``indexed_columns=``, ``zorder_by=`` are refused
#: with the key they probably meant instead of being ignored.
LOOKALIKE_STEMS: Tuple[Tuple[str, str], ...] = (
    ("zorder", "columns_to_index"),
    ("clusterby", "columns_to_index"),
    ("liquid", "columns_to_index"),
    ("index", "columns_to_index"),
    ("cube", "cube_size"),
    ("optimi", "optimize_after_run"),
    ("columnstat", "column_stats"),
    ("nonfinite", "non_finite"),
    ("skipping", "skipping_indexes"),
    ("bloom", "skipping_indexes"),
    ("fusefilter", "skipping_indexes"),
    ("takeover", "take_over_location"),
    ("qbeast", "columns_to_index"),
)
_MODE_HINT = (
    "a qbeast model without incremental_strategy rebuilds its table on every run (like "
    "materialized='table'); set incremental_strategy='append' to append the model's rows instead"
)


#: Keys of incremental models that a ``table`` model ignores (dbt's table materialization does).
INCREMENTAL_ONLY_KEYS: Tuple[str, ...] = (
    "incremental_strategy", "unique_key", "incremental_predicates", "predicates",
    "merge_update_columns", "merge_exclude_columns", "on_schema_change", "write_mode",
)


def qbeast_spelling(config: Mapping[str, Any]) -> Optional[str]:
    """The materialization a qbeast model is spelled with (``qbeast``, or dbt-spark's ``table``
    and ``incremental`` with ``file_format='qbeast'``); None for a model that is not qbeast."""
    materialized = str(config.get("materialized") or "")
    if materialized == "qbeast":
        return materialized
    file_format = config.get("file_format")
    if (materialized in ("table", "incremental") and isinstance(file_format, str)
            and file_format.strip().lower() == QBEAST_FILE_FORMAT):
        return materialized
    return None


def _standard_keys() -> frozenset:
    """Config keys dbt and dbt-spark define themselves: never reported as qbeast typos."""
    keys = {"post-hook", "pre-hook", "file_format", "partition_by", "clustered_by", "buckets",
            "options", "merge_update_columns", "merge_exclude_columns", "incremental_predicates",
            "location_root", "sql_header", "language", *DATABRICKS_PYTHON_KEYS}
    try:
        from dbt.artifacts.resources.v1.model import ModelConfig

        keys.update(ModelConfig.__dataclass_fields__)
    except ImportError:  # pragma: no cover - dbt-core absent: the adapter used as a library
        pass
    return frozenset(keys)


def _squash(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _unknown_key_error(model: str, key: str, suggestion: str) -> QbeastModelConfigError:
    return QbeastModelConfigError(
        f"model {model}: unknown config key {key!r} (did you mean {suggestion!r}?); valid qbeast "
        f"keys: {', '.join(QBEAST_KEYS)} (aliases: {', '.join(ALIASES)})"
    )


def check_unknown_keys(model: str, config: Mapping[str, Any]) -> None:
    """Reject config keys that look like a misspelled or foreign qbeast option.

    dbt lets users add any key to a model's config (for their own macros), so only keys that are
    not dbt's own and that come close to a qbeast option are errors: typos (``colums_to_index``,
    ``cube_sise``, ``CubeSize``) and other engines' words for the same idea (``cube``,
    ``optimize``, ``indexed_columns``, ``zorder_by``). ``mode`` gets its own message: it is the
    engine's word for what dbt calls the incremental strategy.
    """
    spellings = {_squash(key): key for key in QBEAST_KEYS}  # aliases squash the same
    standard = _standard_keys()
    for key in config:
        if (not isinstance(key, str) or key in QBEAST_KEYS or key in ALIASES or key in standard
                or key == "write_mode"):
            continue
        squashed = _squash(key)
        if squashed in ("mode", "writemode", "savemode"):
            raise QbeastModelConfigError(
                f"model {model}: unknown config key {key!r}; {_MODE_HINT}"
            )
        close = difflib.get_close_matches(squashed, list(spellings), n=1, cutoff=0.8)
        if close:
            raise _unknown_key_error(model, key, spellings[close[0]])
        for stem, suggestion in LOOKALIKE_STEMS:
            if stem in squashed:
                raise _unknown_key_error(model, key, suggestion)


def is_set(value: Any) -> bool:
    """False for a key's empty default (None, '', {}, [])."""
    return value is not None and value != "" and value != {} and value != []


def check_unsupported_keys(model: str, config: Mapping[str, Any], language: str) -> None:
    """Refuse dbt keys the qbeast materialization cannot honour, instead of ignoring them."""
    for key, instead in NOT_FOR_QBEAST.items():
        value = config.get(key)
        if key == "file_format" and isinstance(value, str) and value.strip().lower() in ("qbeast", "delta"):
            continue
        if is_set(value):
            raise QbeastModelConfigError(
                f"model {model}: config {key}={value!r} is not supported by the qbeast "
                f"materialization: {instead}"
            )
    check_python_keys(model, config, language)


def check_python_keys(model: str, config: Mapping[str, Any], language: str) -> None:
    """Python models run on the embedded session: Databricks submission keys would be ignored."""
    if language != "python":
        return
    for key in DATABRICKS_PYTHON_KEYS:
        value = config.get(key)
        if is_set(value):
            raise QbeastModelConfigError(
                f"model {model}: config {key}={value!r} is a Databricks setting; Python models of "
                "the qbeast adapter run on the dbt process's own Spark session, so remove it"
            )
    missing = missing_packages(config.get("packages") or [])
    if missing:
        raise QbeastModelConfigError(
            f"model {model}: config packages lists {', '.join(missing)}, which the Python "
            "environment dbt runs in does not have; install them there (Python models run in the "
            "dbt process)"
        )


def missing_packages(packages: Sequence[Any]) -> List[str]:
    """Entries of a Python model's ``packages`` that are not installed (distribution names)."""
    import re
    from importlib import metadata

    missing = []
    for entry in packages:
        name = re.split(r"[<>=!~\[; ]", str(entry).strip(), maxsplit=1)[0]
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(str(entry))
    return missing


def resolve_aliases(model: str, config: Mapping[str, Any]) -> Dict[str, Any]:
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


def has_qbeast_file_format(config: Mapping[str, Any]) -> bool:
    """A snapshot or seed written by the qbeast engine: ``file_format='qbeast'`` in its config."""
    file_format = config.get("file_format")
    return isinstance(file_format, str) and file_format.strip().lower() == QBEAST_FILE_FORMAT


def keys_for_spelling(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The keys a model's spelling of the materialization reads: a ``table`` model rebuilds, so
    dbt ignores its incremental keys, and so does the qbeast materialization."""
    if qbeast_spelling(config) == "table":
        return {k: v for k, v in config.items() if k not in INCREMENTAL_ONLY_KEYS}
    return dict(config)
