"""Revisions: the versioned index space of a Qbeast table (FORMAT §3.8, §4).

A revision fixes, for every indexed column, the transformer (spec) and the transformation (fitted
function to [0, 1]); every block of the table belongs to exactly one revision. Revisions live as
JSON strings in the Delta ``metaData.configuration`` under ``qbeast.revision.<id>`` and must be
byte-compatible with qbeast-spark's Jackson output. ``compute_revision_change`` is the decision an
append makes: keep writing into the latest revision, or open revision ``latest + 1``.
"""
from __future__ import annotations

import json
import random as _random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qbeast.core.defaults import DEFAULT_CUBE_SIZE, REVISION_HEADROOM_PERCENT
from qbeast.core.jvm_compat import jackson_json
from qbeast.core.transformations import (
    EmptyTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    Transformation,
    transformation_from_json_obj,
)
from qbeast.core.transformers import (
    ColumnSpec,
    EmptyTransformer,
    LinearTransformer,
    Transformer,
    make_transformer,
    parse_column_stats,
    parse_columns_to_index,
    transformer_from_json_obj,
)
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError

LAST_REVISION_KEY = "qbeast.lastRevisionID"
REVISION_PREFIX = "qbeast.revision."
#: Pre-0.6 tables stored replicated cube sets under this prefix; ignored today, removed on upgrade.
REPLICATED_SET_PREFIX = "qbeast.replicatedSet."
STAGING_REVISION_ID = 0

__all__ = [
    "Revision",
    "LAST_REVISION_KEY",
    "REVISION_PREFIX",
    "REPLICATED_SET_PREFIX",
    "DEFAULT_CUBE_SIZE",
    "STAGING_REVISION_ID",
    "revision_key",
    "revisions_from_configuration",
    "last_revision_id",
    "updated_configuration",
    "without_qbeast_keys",
    "staging_revision",
    "staging_revision_for",
    "initial_revision",
    "plan_transformers",
    "compute_revision_change",
    "fits_within",
]


def revision_key(revision_id: int) -> str:
    """The configuration key holding revision ``revision_id``'s JSON."""
    return f"{REVISION_PREFIX}{revision_id}"


def _require_int(obj: Mapping[str, Any], key: str) -> int:
    if key not in obj:
        raise FormatError(f"revision JSON lacks the field {key!r}")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise FormatError(f"revision field {key!r} must be a JSON integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Revision:
    """One revision: its id, creation time (epoch ms), table id, cube size and per-column functions."""

    revision_id: int
    timestamp: int
    table_id: str
    desired_cube_size: int
    column_transformers: tuple[Transformer, ...]
    transformations: tuple[Transformation, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "column_transformers", tuple(self.column_transformers))
        object.__setattr__(self, "transformations", tuple(self.transformations))
        if self.transformations and len(self.transformations) != len(self.column_transformers):
            raise FormatError(
                f"revision {self.revision_id} has {len(self.column_transformers)} transformers but "
                f"{len(self.transformations)} transformations"
            )

    @property
    def columns(self) -> list[str]:
        """Indexed column names in index (dimension) order."""
        return [t.column_name for t in self.column_transformers]

    @property
    def dimension_count(self) -> int:
        """Number of indexed columns = dimensions of the cube space."""
        return len(self.column_transformers)

    @property
    def is_staging(self) -> bool:
        """Revision 0 made only of ``EmptyTransformer``s (FORMAT §4.4)."""
        return self.revision_id == STAGING_REVISION_ID and all(
            isinstance(t, EmptyTransformer) for t in self.column_transformers
        )

    def to_json_obj(self) -> dict[str, Any]:
        """The JSON object with qbeast-spark's field order."""
        return {
            "revisionID": self.revision_id,
            "timestamp": self.timestamp,
            "tableID": self.table_id,
            "desiredCubeSize": self.desired_cube_size,
            "columnTransformers": [t.to_json_obj() for t in self.column_transformers],
            "transformations": [t.to_json_obj() for t in self.transformations],
        }

    def to_json(self) -> str:
        """Compact JSON exactly as qbeast-spark stores it in ``qbeast.revision.<id>``."""
        return jackson_json(self.to_json_obj())

    @classmethod
    def from_json(cls, text: str | bytes) -> "Revision":
        """Parse a revision JSON string; malformed or mistyped content raises ``FormatError``."""
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FormatError(f"revision JSON is not valid JSON: {exc}") from exc
        return cls.from_json_obj(obj)

    @classmethod
    def from_json_obj(cls, obj: Any) -> "Revision":
        """Build from the decoded JSON object (ints and floats as ``json`` produced them)."""
        if not isinstance(obj, dict):
            raise FormatError(f"revision JSON must be an object, got {type(obj).__name__}")
        table_id = obj.get("tableID")
        if not isinstance(table_id, str):
            raise FormatError(f"revision field 'tableID' must be a string, got {table_id!r}")
        raw_transformers = obj.get("columnTransformers")
        raw_transformations = obj.get("transformations", [])
        if not isinstance(raw_transformers, list) or not isinstance(raw_transformations, list):
            raise FormatError("revision fields 'columnTransformers' and 'transformations' must be arrays")
        transformers = [transformer_from_json_obj(t) for t in raw_transformers]
        transformations = [transformation_from_json_obj(t) for t in raw_transformations]
        if transformations and len(transformations) != len(transformers):
            raise FormatError(
                f"revision has {len(transformers)} columnTransformers but {len(transformations)} transformations"
            )
        transformations = [
            _with_type(tr, tf.data_type) for tr, tf in zip(transformations, transformers)
        ]
        return cls(
            revision_id=_require_int(obj, "revisionID"),
            timestamp=_require_int(obj, "timestamp"),
            table_id=table_id,
            desired_cube_size=_require_int(obj, "desiredCubeSize"),
            column_transformers=tuple(transformers),
            transformations=tuple(transformations),
        )

    def transform_points(self, values: Sequence[np.ndarray], nulls: Sequence[np.ndarray | None] | None = None) -> np.ndarray:
        """Coordinates ``(n, d)`` of n rows: column i goes through transformation i.

        ``values[i]`` holds column i's canonical values and ``nulls[i]`` its null mask (or None).
        Float columns hashed by value text are handed over as float32 so that they print with
        ``Float.toString`` like the JVM's boxed ``Float``.
        """
        if not self.transformations:
            raise InvalidOptionError(f"revision {self.revision_id} has no transformations; it cannot place rows")
        if len(values) != self.dimension_count:
            raise InvalidOptionError(
                f"transform_points got {len(values)} columns; revision {self.revision_id} indexes {self.columns}"
            )
        masks = list(nulls) if nulls is not None else [None] * len(values)
        n = len(values[0]) if values else 0
        out = np.empty((n, self.dimension_count), dtype=np.float64)
        for i, (tf, tr) in enumerate(zip(self.transformations, self.column_transformers)):
            column = np.asarray(values[i])
            if len(column) != n:
                raise InvalidOptionError(f"column {tr.column_name!r} has {len(column)} values, expected {n}")
            if isinstance(tf, HashTransformation) and tr.data_type is QDataType.FLOAT and column.dtype == np.float64:
                column = column.astype(np.float32)
            out[:, i] = tf.transform_many(column, masks[i])
        return out


def _reject_constant(name: str) -> Any:
    raise FormatError(f"revision JSON contains {name}, which JSON (and qbeast-spark) does not allow")


def _with_type(transformation: Transformation, data_type: QDataType | None) -> Transformation:
    """Give deprecated Identity forms (no stored type) the type of their column transformer."""
    if isinstance(transformation, IdentityTransformation) and transformation.data_type is None:
        if data_type is None or not data_type.is_ordered:
            raise FormatError("a deprecated identity transformation belongs to a column without an ordered type")
        return transformation.with_data_type(data_type)
    return transformation


# --------------------------------------------------------------------------------------------
# Delta metaData.configuration
# --------------------------------------------------------------------------------------------


def last_revision_id(configuration: Mapping[str, str]) -> int | None:
    """``qbeast.lastRevisionID`` as an int, or None when the table carries no Qbeast metadata."""
    raw = configuration.get(LAST_REVISION_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"{LAST_REVISION_KEY} must be an integer, got {raw!r}") from exc


def revisions_from_configuration(configuration: Mapping[str, str]) -> dict[int, Revision]:
    """Every ``qbeast.revision.<id>`` entry, keyed by the id after the last '.'."""
    revisions: dict[int, Revision] = {}
    for key, value in configuration.items():
        if not key.startswith(REVISION_PREFIX):
            continue
        suffix = key.rsplit(".", 1)[1]
        try:
            revision_id = int(suffix)
        except ValueError as exc:
            raise FormatError(f"configuration key {key!r} does not end with a revision id") from exc
        revision = Revision.from_json(value)
        if revision.revision_id != revision_id:
            raise FormatError(
                f"configuration key {key!r} holds revision {revision.revision_id}; the ids must match"
            )
        revisions[revision_id] = revision
    return revisions


def without_qbeast_keys(configuration: Mapping[str, str]) -> dict[str, str]:
    """The configuration minus every revision key (what an overwrite starts from, FORMAT §4.2)."""
    return {
        k: v for k, v in configuration.items()
        if k != LAST_REVISION_KEY and not k.startswith(REVISION_PREFIX) and not k.startswith(REPLICATED_SET_PREFIX)
    }


def updated_configuration(configuration: Mapping[str, str], revision: Revision) -> dict[str, str]:
    """The configuration after committing ``revision`` (FORMAT §4.3).

    Sets ``qbeast.lastRevisionID`` and ``qbeast.revision.<id>``; when the revision is 1 and no
    revision 0 exists, also adds the staging revision 0 that qbeast-spark always pairs with it.
    """
    result = dict(configuration)
    if revision.revision_id == 1 and revision_key(STAGING_REVISION_ID) not in result:
        result[revision_key(STAGING_REVISION_ID)] = staging_revision_for(revision).to_json()
    result[revision_key(revision.revision_id)] = revision.to_json()
    result[LAST_REVISION_KEY] = str(revision.revision_id)
    return result


def staging_revision(table_id: str, columns: Sequence[str], desired_cube_size: int, timestamp: int) -> Revision:
    """Revision 0: the given columns with Empty transformers and transformations."""
    return Revision(
        revision_id=STAGING_REVISION_ID,
        timestamp=timestamp,
        table_id=table_id,
        desired_cube_size=desired_cube_size,
        column_transformers=tuple(EmptyTransformer(c) for c in columns),
        transformations=tuple(EmptyTransformation() for _ in columns),
    )


def staging_revision_for(first: Revision) -> Revision:
    """The staging revision qbeast-spark writes next to revision 1 (timestamp − 1 ms)."""
    return staging_revision(first.table_id, first.columns, first.desired_cube_size, first.timestamp - 1)


# --------------------------------------------------------------------------------------------
# When an append opens a new revision (FORMAT §3.8)
# --------------------------------------------------------------------------------------------


def _check_cube_size(cube_size: Any) -> int:
    if isinstance(cube_size, bool) or not isinstance(cube_size, int) or cube_size <= 0:
        raise InvalidOptionError(f"cubeSize must be a positive integer, got {cube_size!r}",
                                 option="cube_size", value=cube_size, allowed="a positive integer")
    return cube_size


def _specs(specs: str | Sequence[str] | Sequence[ColumnSpec] | None) -> list[ColumnSpec] | None:
    if specs is None:
        return None
    if isinstance(specs, str) or (isinstance(specs, Sequence) and all(isinstance(s, str) for s in specs)):
        return parse_columns_to_index(specs)  # type: ignore[arg-type]
    return list(specs)  # type: ignore[arg-type]


def _data_type_of(column: str, data_types: Mapping[str, QDataType] | None) -> QDataType:
    if data_types is None or column not in data_types:
        known = ", ".join(data_types) if data_types else "(none)"
        raise InvalidOptionError(f"indexed column {column!r} is not in the data; available columns: {known}")
    return data_types[column]


def initial_revision(table_id: str, specs: str | Sequence[str] | Sequence[ColumnSpec],
                     data_types: Mapping[str, QDataType], cube_size: int | None, timestamp: int) -> Revision:
    """The revision 0 a new table starts from: real transformers, no transformations yet.

    qbeast-spark commits exactly this (as ``qbeast.revision.0``) when the first write is empty;
    otherwise ``compute_revision_change`` turns it into revision 1.
    """
    parsed = _specs(specs) or []
    transformers = tuple(make_transformer(s.name, s.type_name, _data_type_of(s.name, data_types)) for s in parsed)
    size = DEFAULT_CUBE_SIZE if cube_size is None else _check_cube_size(cube_size)
    return Revision(STAGING_REVISION_ID, timestamp, table_id, size, transformers, ())


def plan_transformers(latest: Revision, specs: str | Sequence[str] | Sequence[ColumnSpec] | None,
                      data_types: Mapping[str, QDataType] | None = None) -> tuple[list[Transformer], list[bool]]:
    """Steps 1–2 of FORMAT §3.8: the transformers of the next write and which ones changed.

    The Spark layer calls this first to know which ``stats_sql`` expressions to run.
    """
    parsed = _specs(specs)
    if parsed is None:
        parsed = [ColumnSpec(c, None) for c in latest.columns]
    names = [s.name for s in parsed]
    if names != latest.columns:
        raise InvalidOptionError(
            f"columnsToIndex {names} differs from the indexed columns {latest.columns} of revision "
            f"{latest.revision_id}; changing the indexed columns requires mode='overwrite'",
            option="columns_to_index", value=names, allowed=list(latest.columns),
        )
    transformers: list[Transformer] = []
    changed: list[bool] = []
    for spec, old in zip(parsed, latest.column_transformers):
        if isinstance(old, EmptyTransformer):
            transformers.append(make_transformer(spec.name, spec.type_name, _data_type_of(spec.name, data_types)))
            changed.append(True)
        elif spec.type_name is not None and spec.type_name != old.type_name:
            data_type = old.data_type if old.data_type is not None else _data_type_of(spec.name, data_types)
            transformers.append(make_transformer(spec.name, spec.type_name, data_type))
            changed.append(True)
        else:
            transformers.append(old)
            changed.append(False)
    return transformers, changed


def _fit(transformer: Transformer, stats: Mapping[str, Any], user_stats: Mapping[str, Any],
         rng: _random.Random | None) -> Transformation:
    """Transformation from the data stats, merged with the one from columnStats when given."""
    fitted = transformer.make_transformation(stats, rng)
    own = {k: user_stats[k] for k in transformer.stats_keys() if k in user_stats}
    if not own:
        return fitted
    from_user = transformer.make_transformation(own, rng)
    if isinstance(transformer, LinearTransformer) and isinstance(from_user, IdentityTransformation):
        lo, hi = transformer.stats_keys()
        raise InvalidOptionError(
            f"columnStats for column {transformer.column_name!r} must give both {lo!r} and {hi!r} with "
            f"{lo} < {hi}; got {own}",
            option="column_stats", value=own, allowed=f"both {lo!r} and {hi!r} with {lo} < {hi}",
        )
    return fitted.merge(from_user, rng)


def _with_headroom(old: Transformation, merged: Transformation, percent: int,
                   rng: _random.Random | None) -> Transformation:
    """``merged`` widened where it grew past ``old`` (linear ranges only; see compute_revision_change)."""
    if percent <= 0 or not isinstance(merged, LinearTransformation):
        return merged
    if isinstance(old, LinearTransformation):
        bounds = (old.min_number, old.max_number)
    elif isinstance(old, IdentityTransformation) and old.identity_value is not None:
        bounds = (old.identity_value, old.identity_value)
    else:
        return merged
    return merged.with_headroom(bounds[0], bounds[1], percent / 100.0, rng)


def compute_revision_change(
    latest: Revision | None,
    specs: str | Sequence[str] | Sequence[ColumnSpec] | None,
    stats: Mapping[str, Any],
    cube_size: int | None,
    column_stats: Mapping[str, Any] | str | None,
    now: int,
    *,
    data_types: Mapping[str, QDataType] | None = None,
    table_id: str | None = None,
    rng: _random.Random | None = None,
    headroom_percent: int = REVISION_HEADROOM_PERCENT,
) -> Revision | None:
    """Decide whether the data described by ``stats`` needs a new revision (FORMAT §3.8).

    ``latest`` is the table's latest revision (None for a new table, which then needs ``table_id``,
    ``data_types`` and ``specs``). ``stats`` is the row of the single stats pass (aliases without
    backticks). Returns the new revision (id = latest + 1, timestamp ``now``, unchanged parts
    copied), or None when the data fits ``latest`` as it is.

    A linear range that grows past the latest revision's gets ``headroom_percent`` of its new span
    added on the side(s) it grew (:meth:`LinearTransformation.with_headroom`), so that data
    growing in one direction opens O(log growth) revisions rather than one per append. Readers
    only see wider min/max numbers: the format is unchanged. Ranges from ``column_stats`` are
    the user's statement of the space and get no headroom.
    """
    if latest is None:
        if table_id is None or specs is None or data_types is None:
            raise InvalidOptionError("a new table needs columnsToIndex, the column data types and a table id")
        latest = initial_revision(table_id, specs, data_types, cube_size, now)
    transformers, transformer_changed = plan_transformers(latest, specs, data_types)
    size = latest.desired_cube_size if cube_size is None else _check_cube_size(cube_size)
    size_changed = size != latest.desired_cube_size
    user_stats = parse_column_stats(column_stats, transformers)
    fitted = [_fit(t, stats, user_stats, rng) for t in transformers]

    all_new = not latest.transformations or latest.is_staging
    transformations: list[Transformation] = []
    any_transformation_changed = False
    for i, (transformer, candidate) in enumerate(zip(transformers, fitted)):
        if all_new or transformer_changed[i]:
            chosen = candidate
            any_transformation_changed = True
        else:
            old = latest.transformations[i]
            if old.is_superseded_by(candidate):
                chosen = old.merge(candidate, rng)
                if not user_stats:  # a range the user states is taken as given
                    chosen = _with_headroom(old, chosen, headroom_percent, rng)
                any_transformation_changed = True
            else:
                chosen = old
        if chosen.is_empty:
            keys = transformer.stats_keys()
            hint = f" as {keys[0]!r}" if keys else ""
            raise InvalidOptionError(
                f"column {transformer.column_name!r} uses the {transformer.type_name!r} transformer, whose "
                f"stats must be provided in columnStats{hint}",
                option="column_stats", value=None,
                allowed=f"the stats of column {transformer.column_name!r}{hint} "
                        f"(its {transformer.type_name!r} transformer needs them)",
            )
        transformations.append(chosen)

    if not (any(transformer_changed) or size_changed or any_transformation_changed):
        return None
    return Revision(
        revision_id=latest.revision_id + 1,
        timestamp=now,
        table_id=latest.table_id,
        desired_cube_size=size,
        column_transformers=tuple(transformers),
        transformations=tuple(transformations),
    )


def fits_within(revision: Revision, target: Revision) -> bool:
    """Whether every row indexed by ``revision`` lies inside ``target``'s space.

    Then its rows can be re-indexed into ``target`` (a revision merge) without opening a new
    revision: both index the same columns with the same transformers, and no transformation of
    ``target`` would be superseded by ``revision``'s (the test an append's stats pass applies to
    decide whether the data grew the space, FORMAT §3.8). Staging (revision 0) fits nowhere: its
    rows are indexed by optimize's staging step instead.
    """
    if STAGING_REVISION_ID in (revision.revision_id, target.revision_id):
        return False
    if [t.to_json_obj() for t in revision.column_transformers] != [
            t.to_json_obj() for t in target.column_transformers]:
        return False
    if len(revision.transformations) != len(target.transformations):
        return False
    return not any(theirs.is_superseded_by(ours)
                   for ours, theirs in zip(revision.transformations, target.transformations))
