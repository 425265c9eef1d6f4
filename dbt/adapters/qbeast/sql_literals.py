"""Quoting of values the adapter puts into Spark SQL text.

Run-operation arguments and config values reach SQL only through these helpers, never spliced in
raw, so a quote or backslash in a value cannot end the literal early.
"""
from __future__ import annotations


def sql_string(value: object) -> str:
    """``value`` as a Spark SQL string literal (single quotes; backslash and quote escaped)."""
    text = str(value)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
