"""Expressions of one column that skipping indexes can be declared on: ``lower(email)``.

A team that looks rows up by ``lower(email) = 'x'`` wants files pruned by the lowered value,
which no index on ``email`` itself can answer. An index on an expression stores the hashes of
the expression's values; that is exact only if this engine computes, when it builds the entry
from a written file, exactly the value Spark computes when it evaluates the query. So the set is
small and each function is evaluated only where its Spark semantics are known to the byte:

* ``lower(c)``, ``upper(c)`` of a string column: Spark maps ASCII letters itself and hands any
  other string to Java's locale-dependent case mapping (``'ΑΣ'`` lowers to ``'ας'``, ``'ß'``
  uppers to ``'SS'``, the Kelvin sign lowers to ``'k'``). A file whose values are all ASCII gets
  an exact entry; a file with any non-ASCII value gets "unknown" (always read for that index).
* ``trim(c)``, ``ltrim(c)``, ``rtrim(c)``: remove the space character (0x20) only, byte-wise,
  as Spark does (tabs and other white space stay).
* ``substring(c, pos, len)`` with ``pos >= 1`` (``substr`` is the same, ``left(c, n)`` is
  ``substring(c, 1, n)``; ``len`` may be left out): code points, as Spark counts them in valid
  UTF-8 (a file with invalid UTF-8 gets "unknown").

Others are refused by name. ``to_date(ts)`` is not in the set on purpose: Spark rewrites
``to_date(ts) = d`` into a range on ``ts`` itself, which the min/max statistics prune, so an
index on it would never be asked. A :class:`Call` is the subject of a predicate in
:mod:`qbeast.core.expressions` in place of a column name; it never equals a column name, so a
pruning step that knows only columns ignores it (keeps the file).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from qbeast.errors import InvalidOptionError

#: The functions (canonical names) an index may be declared on, and how people spell the set.
FUNCTIONS = ("lower", "upper", "trim", "ltrim", "rtrim", "substring")
ALLOWED = ("lower(c)", "upper(c)", "trim(c)", "ltrim(c)", "rtrim(c)", "substring(c, pos, len)",
           "substr(c, pos, len)", "left(c, len)")
#: Other spellings of the same functions (``btrim(c)`` is how Spark names ``trim`` too).
_ALIASES = {"substr": "substring", "btrim": "trim"}
#: Every name a call is spelled with (what a parser recognises as a call to translate).
NAMES = (*FUNCTIONS, *_ALIASES, "left")
#: Spark's ``substring(c, pos)``: ``len`` is Integer.MAX_VALUE.
_TO_END = 2**31 - 1
#: The column type each function reads and the type of its values.
SOURCE_TYPE = "string"
RESULT_TYPE = "string"


@dataclass(frozen=True)
class Call:
    """``function(column, *args)``: an expression of one column (see the module docstring)."""

    function: str
    column: str
    args: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.function}({', '.join([self.column, *map(str, self.args)])})"

    def with_column(self, column: str) -> Call:
        """The same call on ``column`` (the table's spelling of the name)."""
        return Call(self.function, column, self.args)


def make_call(function: str, column: str, args: tuple[int, ...] = ()) -> Call | None:
    """The canonical :class:`Call` of ``function(column, *args)`` (aliases resolved, ``left``
    as ``substring``), or None when it is not in the set this engine evaluates exactly."""
    name = function.lower()
    name = _ALIASES.get(name, name)
    if name == "left":
        if len(args) != 1:
            return None
        name, args = "substring", (1, args[0])
    if name not in FUNCTIONS:
        return None
    if name == "substring":
        if len(args) == 1:
            args = (args[0], _TO_END)
        if len(args) != 2 or args[0] < 1 or not 0 <= args[1] <= _TO_END:
            return None
    elif args:
        return None
    return Call(name, column, tuple(int(a) for a in args))


_CALL_TEXT = re.compile(r"^\s*([A-Za-z_]+)\s*\(\s*(`(?:[^`]|``)+`|[^\s,()`]+)\s*((?:,\s*-?\d+\s*)*)\)\s*$")


@lru_cache(maxsize=1024)
def parse_call(text: str) -> Call | None:
    """The :class:`Call` a declaration key such as ``'lower(email)'`` names; None for a plain
    column name (no parenthesis). Anything else with a parenthesis is refused, naming the
    functions allowed."""
    if "(" not in text:
        return None
    match = _CALL_TEXT.match(text)
    call = None
    if match:
        column = match.group(2)
        if column.startswith("`"):
            column = column[1:-1].replace("``", "`")
        args = tuple(int(a) for a in re.findall(r"-?\d+", match.group(3)))
        call = make_call(match.group(1), column, args)
    if call is None:
        raise InvalidOptionError(
            f"skipping_indexes: {text!r} is not an expression an index can be declared on; "
            f"allowed: {', '.join(ALLOWED)} of a string column c, with pos >= 1 and len >= 0",
            option="skipping_indexes", value=text, allowed=list(ALLOWED))
    return call


def apply(call: Call, value: str | None) -> str | None:
    """``call`` of one Python value, as Spark computes it (for evaluating a predicate on a row;
    non-ASCII case mapping follows Python's, which Spark's locale-dependent one may not)."""
    if value is None:
        return None
    if call.function == "lower":
        return value.lower()
    if call.function == "upper":
        return value.upper()
    if call.function == "trim":
        return value.strip(" ")
    if call.function == "ltrim":
        return value.lstrip(" ")
    if call.function == "rtrim":
        return value.rstrip(" ")
    start, length = call.args
    return value[start - 1:start - 1 + length]


def evaluate(call: Call, values: Any) -> Any:
    """``call`` of a string column's Arrow values (nulls stay null), or None when this file's
    values are outside what is computed exactly (non-ASCII for ``lower``/``upper``, invalid
    UTF-8 for ``substring``): its index entry is then "unknown"."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())
    if len(array) == 0:
        return array
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset: array.offset + len(array) + 1]
    data = array.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]: offsets[-1]] if data is not None else np.empty(0, np.uint8)
    ascii_only = not bool((raw >= 0x80).any())
    if call.function in ("lower", "upper"):
        if not ascii_only:
            return None
        return pc.ascii_lower(array) if call.function == "lower" else pc.ascii_upper(array)
    if call.function in ("trim", "ltrim", "rtrim"):
        # byte-wise: 0x20 is never part of a multi-byte UTF-8 sequence
        trim = {"trim": pc.ascii_trim, "ltrim": pc.ascii_ltrim, "rtrim": pc.ascii_rtrim}[call.function]
        return trim(array, characters=" ")
    start, length = call.args
    if not ascii_only:
        try:
            array.validate(full=True)
        except pa.ArrowInvalid:
            return None
    return pc.utf8_slice_codeunits(array, start=start - 1, stop=start - 1 + length)
