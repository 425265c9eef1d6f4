"""Quoting of values the adapter puts into Spark SQL text: the engine's own rule.

Run-operation arguments and config values reach SQL only through :func:`sql_string`, never
spliced in raw, so a quote or backslash in a value cannot end the literal early.
"""
from __future__ import annotations

from qbeast import sql_string

__all__ = ["sql_string"]
