"""Pieces every table operation shares: argument checks and printable result objects.

The operations are called from Python, from the CLI and from dbt run-operations through the
adapter. All three want the same things from a result: a plain ``dict`` of JSON-friendly values
(``to_dict``) to hand to Jinja or ``json.dumps``, and a readable text block (``str``) to print.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from qbeast import checks

class OperationResult:
    """Base of the operations' result dataclasses: ``to_dict`` and a readable ``__str__``.

    Subclasses are dataclasses and implement :meth:`summary_lines`; nested dataclasses and
    tuples are converted recursively by ``to_dict``.
    """

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly values (tuples become lists, nested results become dicts)."""
        return _plain(dataclasses.asdict(self))  # type: ignore[call-overload]

    def summary_lines(self) -> list[str]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self.summary_lines())


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# The operations' argument checks are the engine's shared ones (qbeast.checks); these keep the
# argument order the operations call them with (value first).


def check_path(path: object, what: str = "path") -> str:
    """A non-empty table path string (local path or ``file:`` URI)."""
    return checks.check_path(what, path)


def check_bool(value: object, name: str) -> bool:
    """A real bool: ``dry_run="false"`` from a template must not silently mean True."""
    return checks.check_bool(name, value)


def check_optional_int(value: object, name: str, minimum: int) -> int | None:
    """None, or an int >= ``minimum`` (bools rejected)."""
    return checks.check_optional_int(name, value, minimum)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """Rows as left-aligned text columns under ``headers`` (one string per line)."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in text_rows)
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 1 else f"{value:.4g}"
    return str(value)
