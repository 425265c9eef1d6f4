"""One SQL text as the statements Spark runs one at a time.

``spark.sql`` parses exactly one statement, but dbt hands the cursor texts of several: a model's
``sql_header`` (``set ...;``, ``declare variable ...;``, a temporary function) is prepended to its
``create table ... as`` by dbt-spark's macros, and a hook may hold a script. The text is cut at
each ``;`` that ends a statement: not one inside a string literal (Spark's backslash escapes
included), a quoted identifier, a ``$$`` body or a comment. The cursor cuts a text only when
Spark cannot parse it whole, so a compound ``BEGIN ... END`` script still runs as one.
"""
from __future__ import annotations

from typing import List, Optional

_QUOTES = ("'", '"', "`")


def split_statements(sql: str) -> List[str]:
    """The statements of ``sql``, in order, each without its ``;``; empty ones (a trailing ``;``,
    a blank line between two) are left out. A comment stays with the statement it precedes."""
    statements: List[str] = []
    start = 0
    index = 0
    length = len(sql)
    while index < length:
        char = sql[index]
        if char in _QUOTES:
            index = _after_quoted(sql, index)
            continue
        if sql.startswith("$$", index):
            end = sql.find("$$", index + 2)
            index = length if end < 0 else end + 2
            continue
        after = _after_comment(sql, index)
        if after is not None:
            index = after
            continue
        if char == ";":
            statements.append(sql[start:index])
            start = index + 1
        index += 1
    statements.append(sql[start:])
    return [statement for statement in statements if _has_code(statement)]


def _after_quoted(sql: str, index: int) -> int:
    """The index after the quoted text opening at ``index`` (its end, or the end of ``sql``)."""
    quote = sql[index]
    index += 1
    while index < len(sql):
        char = sql[index]
        if char == "\\" and quote != "`":
            index += 2
            continue
        if char == quote:
            if sql.startswith(quote * 2, index):  # a doubled quote stands for itself
                index += 2
                continue
            return index + 1
        index += 1
    return index


def _after_comment(sql: str, index: int) -> Optional[int]:
    """The index after the comment opening at ``index`` (the end of ``sql`` for one left open),
    or None when no comment opens there."""
    if sql.startswith("--", index):
        newline = sql.find("\n", index)
        return len(sql) if newline < 0 else newline + 1
    if sql.startswith("/*", index):
        end = sql.find("*/", index + 2)
        return len(sql) if end < 0 else end + 2
    return None


def _has_code(statement: str) -> bool:
    """Whether ``statement`` holds anything but whitespace and comments."""
    index = 0
    while index < len(statement):
        if statement[index].isspace():
            index += 1
            continue
        after = _after_comment(statement, index)
        if after is None:
            return True
        index = after
    return False


__all__ = ["split_statements"]
