"""The aggregates an approximate answer supports, parsed from the text users write.

Only aggregates that a cluster sample can bound are accepted: totals (``count``, ``sum``) have
an unbiased Horvitz-Thompson estimator with a variance estimate, ``avg`` is their ratio. Order
statistics and extremes (``min``, ``max``, percentiles) and ``count(distinct ...)`` have no
interval that a sample of clusters can guarantee: a row that was not read can change them by any
amount. They are refused by name.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from qbeast.errors import InvalidOptionError

#: Functions an approximate answer computes.
SUPPORTED: tuple[str, ...] = ("count", "sum", "avg")

_FORMS = "count(*), count(column), sum(column), avg(column)"
_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.DOTALL)
_COLUMN = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)$")


@dataclass(frozen=True)
class Aggregate:
    """One aggregate: its function and the column it reads (None: ``count(*)``)."""

    function: str
    column: str | None

    @property
    def label(self) -> str:
        """How the answer names it (``count(*)``, ``avg(price)``)."""
        return f"{self.function}({'*' if self.column is None else self.column})"

    @property
    def is_ratio(self) -> bool:
        return self.function == "avg"


def parse_aggregate(text: object) -> Aggregate:
    """The :class:`Aggregate` of ``"count(*)"``, ``"sum(price)"``... (case-insensitive names)."""
    if not isinstance(text, str):
        raise InvalidOptionError(
            f"aggregate must be a string like {_FORMS}, got {text!r}",
            option="aggregates", value=text, allowed=list(SUPPORTED))
    match = _CALL.match(text)
    if match is None:
        raise InvalidOptionError(
            f"aggregate {text!r} is not one of {_FORMS}", option="aggregates", value=text,
            allowed=list(SUPPORTED))
    function, argument = match.group(1).lower(), match.group(2).strip()
    if function not in SUPPORTED:
        raise InvalidOptionError(
            f"aggregate {function!r} cannot be approximated with a bounded error; supported: "
            f"{', '.join(SUPPORTED)} ({_FORMS})", option="aggregates", value=text,
            allowed=list(SUPPORTED))
    if argument == "*":
        if function != "count":
            raise InvalidOptionError(f"{function}(*) is not an aggregate; supported: {_FORMS}",
                                     option="aggregates", value=text, allowed=list(SUPPORTED))
        return Aggregate("count", None)
    if not _COLUMN.match(argument):
        raise InvalidOptionError(
            f"aggregate {text!r} must name one column (expressions and DISTINCT cannot be "
            f"approximated here); supported: {_FORMS}", option="aggregates", value=text,
            allowed=list(SUPPORTED))
    if argument.startswith("`"):
        argument = argument[1:-1].replace("``", "`")
    return Aggregate(function, argument)


def parse_aggregates(specs: object) -> tuple[Aggregate, ...]:
    """Every aggregate of ``specs`` (a string or a non-empty list of strings), duplicates dropped."""
    if isinstance(specs, str):
        specs = [specs]
    if not isinstance(specs, Iterable) or isinstance(specs, (bytes, dict)):
        raise InvalidOptionError(
            f"aggregates must be a string or a list of strings like {_FORMS}, got {specs!r}",
            option="aggregates", value=specs, allowed=list(SUPPORTED))
    parsed = tuple(dict.fromkeys(parse_aggregate(s) for s in specs))
    if not parsed:
        raise InvalidOptionError(f"aggregates must name at least one of {_FORMS}",
                                 option="aggregates", value=specs, allowed=list(SUPPORTED))
    return parsed


def input_columns(aggregates: Iterable[Aggregate]) -> tuple[str | None, ...]:
    """The distinct inputs the aggregates read (None: the row count), in first-use order."""
    return tuple(dict.fromkeys(a.column for a in aggregates))
