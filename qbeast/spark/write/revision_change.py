"""The stats pass of a write and the revision it writes into (FORMAT §3.8, §4.4).

The format core decides *whether* the data needs a new revision (``compute_revision_change``);
this module supplies what it needs from Spark: the indexed columns' types from the DataFrame
schema (checked before any job runs) and the single aggregate query over the data.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.core.columns import check_each_once, resolve_name
from qbeast.core.revision import (
    Revision,
    compute_revision_change,
    initial_revision,
    plan_transformers,
)
from qbeast.core.transformers import ColumnSpec, Transformer, parse_columns_to_index
from qbeast.core.types import QDataType, qdatatype_from_spark_name
from qbeast.errors import InvalidOptionError

COUNT_ALIAS = "count"


@dataclass(frozen=True)
class IndexSpec:
    """The requested indexed columns (``None`` = keep the latest revision's) and their types."""

    specs: list[ColumnSpec] | None
    data_types: dict[str, QDataType]


def index_spec(schema, columns_to_index: str | Sequence[str] | None, base: Revision | None) -> IndexSpec:
    """Parse ``columns_to_index`` and type-check the indexed columns against the data's schema.

    Unknown columns and unsupported types raise before anything is computed or written.
    """
    if columns_to_index is None:
        if base is None:
            raise InvalidOptionError(
                "columns_to_index is required to create a Qbeast table (e.g. 'a,b' or "
                "['a', 'b:hashing']); only appends can default to the table's indexed columns"
            )
        specs = None
        names = list(base.columns)
    else:
        specs = [ColumnSpec(resolve_column(schema, s.name), s.type_name)
                 for s in parse_columns_to_index(columns_to_index)]
        names = [s.name for s in specs]
        check_each_once(names, columns_to_index)
    fields = {f.name: f for f in schema.fields}
    data_types: dict[str, QDataType] = {}
    for name in names:
        field = fields.get(name)
        if field is None:
            raise InvalidOptionError(
                f"indexed column {name!r} is not in the data; available columns: {list(fields)}"
            )
        data_types[name] = qdatatype_from_spark_name(field.dataType.simpleString(), name)
    return IndexSpec(specs, data_types)


def resolve_column(schema, name: str) -> str:
    """The data's spelling of column ``name`` in a Spark schema (the rule of
    :func:`qbeast.core.columns.resolve_name`, shared with ``convert_to_qbeast``)."""
    return resolve_name([f.name for f in schema.fields], name)


def planned_transformers(spec: IndexSpec, base: Revision | None, table_id: str,
                         cube_size: int) -> list[Transformer]:
    """The transformers whose stats the stats pass must compute."""
    if base is None:
        start = initial_revision(table_id, spec.specs or [], spec.data_types, cube_size, 0)
        return list(start.column_transformers)
    return plan_transformers(base, spec.specs, spec.data_types)[0]


def run_stats(data, transformers: Sequence[Transformer]) -> dict[str, Any]:
    """The single aggregate query: every transformer's stats plus ``count(1) AS count``.

    Collected through Arrow so timestamps arrive as UTC instants whatever the Python process's
    local time zone is (``Row`` conversion would use it).
    """
    expressions = [e for t in transformers for e in t.stats_sql()]
    expressions.append(f"count(1) AS `{COUNT_ALIAS}`")
    table = data.selectExpr(*expressions).toArrow()
    return table.to_pylist()[0]


def empty_write_revision(spec: IndexSpec, *, cube_size: int, table_id: str, now: int) -> Revision:
    """What an empty DataFrame creating a table commits: qbeast-spark's "first revision", id 0
    with real transformers and no transformations."""
    return initial_revision(table_id, spec.specs or [], spec.data_types, cube_size, now)


def choose_revision(
    data: Any,
    spec: IndexSpec,
    *,
    base: Revision | None,
    cube_size: int,
    column_stats: Mapping[str, Any] | str | None,
    table_id: str,
) -> tuple[Revision, bool, int]:
    """The revision to write into, whether it is new (must be committed), and the row count.

    An empty DataFrame creating a table commits qbeast-spark's "first revision": id 0 with real
    transformers and no transformations; an empty append writes into the latest revision.
    """
    now = int(time.time() * 1000)
    transformers = planned_transformers(spec, base, table_id, cube_size)
    stats = run_stats(data, transformers)
    count = int(stats[COUNT_ALIAS])
    if count == 0:
        if base is None:
            return empty_write_revision(spec, cube_size=cube_size, table_id=table_id, now=now), True, 0
        return base, False, 0
    from qbeast.spark import settings

    new = compute_revision_change(
        base, spec.specs, stats, cube_size, column_stats, now,
        data_types=spec.data_types, table_id=table_id,
        headroom_percent=settings.REVISION_HEADROOM.read(data.sparkSession),
    )
    if new is None:
        assert base is not None
        return base, False, count
    return new, True, count
