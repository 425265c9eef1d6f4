"""Spark SQL text the engine builds: quoted identifiers and literals, and the row weight.

Every piece of SQL the engine or the dbt adapter assembles from names and values goes through
these functions, so a backtick in a column name or a quote in a value can never end the
identifier or the literal early, and the row weight (FORMAT §2.1) is spelled the same way by the
writer, optimize, the sample filter of reads and dbt's ``qbeast_sample()``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from qbeast.errors import InvalidOptionError


def quote_identifier(name: str) -> str:
    """Backtick-quote a column name for Spark SQL (embedded backticks are doubled)."""
    return "`" + name.replace("`", "``") + "`"


_IDENTIFIER = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_TABLE_NAME = re.compile(rf"^{_IDENTIFIER}(?:\.{_IDENTIFIER}){{0,2}}$")


def check_table_name(name: Any) -> str:
    """A catalog table name safe to put in SQL: ``table``, ``schema.table`` (quoted parts allowed).

    Names go into ``DROP TABLE`` / ``CREATE TABLE`` text as they are, so anything else (quotes,
    semicolons, spaces outside backquotes) is refused rather than escaped.
    """
    if not isinstance(name, str) or not _TABLE_NAME.match(name):
        raise InvalidOptionError(
            f"table name must be [catalog.][schema.]table, each part letters, digits and "
            f"underscores (not starting with a digit) or `backquoted`, got {name!r}"
        )
    return name


def sql_string(value: object) -> str:
    """``value`` as a Spark SQL string literal (single quotes; backslash and quote escaped)."""
    text = str(value)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def row_weight_sql(columns: Iterable[str]) -> str:
    """The row weight: Spark's ``hash()`` (Murmur3, seed 42) over the indexed columns in revision
    order (FORMAT §2.1). It is computed by Spark wherever rows are, and never stored."""
    names = [quote_identifier(c) for c in columns]
    if not names:
        raise ValueError("the row weight needs at least one indexed column")
    return f"hash({', '.join(names)})"
