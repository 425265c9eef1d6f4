"""An approximate answer (a small DataFrame of the engine) as a SQL relation a model selects from.

A model's SQL runs wherever the connection sends it, so the answer (computed in the dbt
process or, with ``method: thrift``, by the server) is inlined as a ``VALUES``
relation with every value cast to its column's type: the model's table gets the answer's columns
and types, on any connection method. Values reach SQL only through the engine's quoting.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

from qbeast import quote_identifier, sql_string


def _literal(value: Any, type_name: str) -> str:
    if value is None:
        return f"cast(null as {type_name})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"cast({sql_string(repr(value))} as {type_name})"
    return f"cast({sql_string(value)} as {type_name})"


def values_sql(columns: Sequence[Tuple[str, str]], values: Sequence[Sequence[Any]]) -> str:
    """``(select ... from values ... as answer(cols))`` holding the rows ``values`` of the
    ``columns`` ((name, Spark type) pairs)."""
    names = ", ".join(quote_identifier(name) for name, _ in columns)
    types = [t for _, t in columns]
    rows: List[str] = []
    for row in values:
        rows.append("(" + ", ".join(_literal(v, t) for v, t in zip(row, types)) + ")")
    if not rows:  # no group was read: the columns, no row
        empty = ", ".join(f"cast(null as {t}) as {quote_identifier(n)}" for n, t in columns)
        return f"(select {empty} where false)"
    return f"(select * from values {', '.join(rows)} as answer({names}))"
