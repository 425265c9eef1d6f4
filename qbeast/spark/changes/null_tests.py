"""Target predicates the one-job path evaluates itself: conjunctions of ``column IS [NOT] NULL``.

Why: a merge or delete+insert with a target predicate (dbt's ``incremental_predicates``, and
every snapshot run after the first: only current rows, ``dbt_valid_to is null``, may be closed)
took the join path, a chain of Spark jobs, because the per-file tasks cannot evaluate SQL. A
null test is the one condition whose result Arrow computes exactly as Spark does: it is never
null itself, so a conjunction of them is plain two-valued logic, and it involves no cast,
collation or time zone. Any other predicate keeps the join path.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast.core import expressions as ex

_NAME = r"(?:`(?P<quoted>[^`]+)`|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))"
_TEST = re.compile(rf"^{_NAME}\s+is\s+(?P<not>not\s+)?null$", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True)
class NullTest:
    """``column IS NULL`` (``is_null``) or ``column IS NOT NULL``, with the table's spelling."""

    column: str
    is_null: bool


def null_tests(text: str, columns: Sequence[str]) -> tuple[NullTest, ...] | None:
    """The conjunction ``text`` as null tests on ``columns`` (names resolved case-insensitively,
    as Spark resolves them), or None when it is anything else."""
    if "'" in text or '"' in text:
        return None
    by_lower: dict[str, list[str]] = {}
    for name in columns:
        by_lower.setdefault(name.lower(), []).append(name)
    tests = []
    for part in _AND.split(_strip_parentheses(text)):
        match = _TEST.match(_strip_parentheses(part))
        if match is None:
            return None
        name = match.group("quoted") or match.group("plain")
        found = by_lower.get(name.lower(), [])
        if len(found) != 1:
            return None
        tests.append(NullTest(found[0], match.group("not") is None))
    return tuple(tests)


def _strip_parentheses(text: str) -> str:
    """``text`` without the parentheses that enclose all of it (``((a))`` -> ``a``)."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _encloses(text):
        text = text[1:-1].strip()
    return text


def _encloses(text: str) -> bool:
    """Whether the first parenthesis of ``text`` closes at its last character."""
    depth = 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if depth == 0:
            return i == len(text) - 1
    return False


def rows_meeting(table: pa.Table, tests: Sequence[NullTest]) -> np.ndarray:
    """Per row of ``table`` (holding the tests' columns), whether every test holds."""
    keep = np.ones(table.num_rows, dtype=bool)
    for test in tests:
        nulls = pc.is_null(table.column(test.column), nan_is_null=False)
        held = np.asarray(nulls.to_numpy(zero_copy_only=False), dtype=bool)
        keep &= held if test.is_null else ~held
    return keep


def as_expressions(tests: Sequence[NullTest]) -> list[ex.Expression]:
    """The tests as core predicates (to AND with others), for the planner to prune the files by
    their null counts."""
    return [ex.IsNull(t.column) if t.is_null else ex.IsNotNull(t.column) for t in tests]
