"""Checks of user-supplied arguments and options, shared by every entry point of the engine.

Each check returns the accepted (sometimes normalized) value or raises
:class:`qbeast.errors.InvalidOptionError` in one wording, ``<option> must be <allowed>, got
<value>``, with the structured fields ``option``, ``value`` and ``allowed`` set. Integrations word
their own messages from those fields (the dbt adapter names its config keys), so a message here
can be reworded without breaking them.

Pure Python on purpose: the format core, the table operations, the Spark settings and the dbt
adapter all check arguments before any Spark job runs, and none of them should import pyspark
for it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qbeast.errors import InvalidOptionError

__all__ = [
    "BOOL_ALLOWED",
    "check_bool",
    "check_fraction",
    "check_int_at_least",
    "check_non_empty_string",
    "check_non_negative_int",
    "check_one_of",
    "check_optional_int",
    "check_path",
    "check_positive_int",
    "invalid",
]

#: The ``allowed`` field of a boolean option.
BOOL_ALLOWED = [True, False]


def invalid(option: str, value: Any, allowed: Any, wording: str, what: str | None = None) -> InvalidOptionError:
    """The error every check raises: ``<what> must be <wording>, got <value>``, with its fields.

    ``what`` is how the message names the option when that differs from its name (``"Spark conf
    spark.qbeast.x"``); ``allowed`` is the structured form of ``wording`` (a list of choices, or
    the phrase itself).
    """
    return InvalidOptionError(f"{what or option} must be {wording}, got {value!r}",
                              option=option, value=value, allowed=allowed)


def _is_int(value: Any) -> bool:
    # bool is an int subclass; True as a cube size is a mistake, not 1
    return isinstance(value, int) and not isinstance(value, bool)


def check_int_at_least(option: str, value: Any, minimum: int, *, what: str | None = None) -> int:
    """``value`` if it is an int >= ``minimum`` (bools refused)."""
    if not _is_int(value) or value < minimum:
        wording = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise invalid(option, value, wording, wording, what)
    return int(value)


def check_positive_int(option: str, value: Any, *, what: str | None = None) -> int:
    """``value`` if it is an int > 0."""
    return check_int_at_least(option, value, 1, what=what)


def check_non_negative_int(option: str, value: Any, *, what: str | None = None) -> int:
    """``value`` if it is an int >= 0."""
    return check_int_at_least(option, value, 0, what=what)


def check_optional_int(option: str, value: Any, minimum: int, *, what: str | None = None) -> int | None:
    """None, or an int >= ``minimum``."""
    if value is None:
        return None
    if not _is_int(value) or value < minimum:
        wording = f"an integer >= {minimum} (or None)"
        raise invalid(option, value, wording, wording, what)
    return int(value)


def check_bool(option: str, value: Any, *, what: str | None = None) -> bool:
    """A real bool: ``dry_run="false"`` from a template must not silently mean True."""
    if not isinstance(value, bool):
        raise invalid(option, value, BOOL_ALLOWED, "true or false", what)
    return value


def check_one_of(option: str, value: Any, choices: Sequence[str], *, ignore_case: bool = False,
                 what: str | None = None) -> str:
    """One of ``choices``; with ``ignore_case`` the choice as spelled in ``choices``."""
    if isinstance(value, str):
        if value in choices:
            return value
        if ignore_case:
            for choice in choices:
                if choice.lower() == value.lower():
                    return choice
    raise invalid(option, value, list(choices), f"one of {list(choices)}", what)


def check_non_empty_string(option: str, value: Any, *, what: str | None = None) -> str:
    """A string with something other than blanks in it."""
    if not isinstance(value, str) or not value.strip():
        raise invalid(option, value, "a non-empty string", "a non-empty string", what)
    return value


def check_path(option: str, value: Any, *, what: str | None = None) -> str:
    """A table path: a non-empty string (a local path or a URI)."""
    if not isinstance(value, str) or not value.strip():
        wording = "a non-empty string naming a table folder"
        raise invalid(option, value, wording, wording, what)
    return value


def check_fraction(option: str, value: Any, *, what: str | None = None) -> float:
    """A number in [0, 1] (bools refused)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0.0 <= float(value) <= 1.0):
        raise invalid(option, value, "a number in [0, 1]", "a number in [0, 1]", what)
    return float(value)
