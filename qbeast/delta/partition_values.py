"""Partition values: the strings of ``add.partitionValues`` and the typed values they stand for.

The Delta protocol ("Partition Value Serialization") stores every partition value as a string,
whatever the column type, and an empty string (or a missing/null entry) means ``null``. The
data files do not hold partition columns (and when a writer materializes them anyway, the log
stays authoritative), so a reader builds those columns from these strings, typed by the schema.

Checkpoints may also carry ``add.partitionValues_parsed``, a struct of typed values; a reader
that finds only that struct turns it back into the string map with :func:`serialize`.

Timestamps without a zone are read as UTC, the time zone this engine pins for its sessions (a
writer that used another session time zone wrote local wall-clock text that cannot be told
apart); ISO text with ``T`` and ``Z`` or an offset, as recent writers produce, is exact.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
from typing import Any

from qbeast.delta.errors import CorruptLogError, UnsupportedFeatureError

_INTEGRAL = ("byte", "short", "integer", "long")


def type_name(type_json: Any) -> str:
    """The simple name of a schema type (``"long"``, ``"decimal(10,2)"``, ``"struct"``...)."""
    if isinstance(type_json, dict):
        return str(type_json.get("type"))
    return str(type_json)


def parse(text: str | None, type_json: Any, column: str = "?") -> Any:
    """The typed value of partition value ``text`` for a column of type ``type_json``.

    Returns Python values Spark and Arrow both accept: ``int``, ``float``, ``Decimal``, ``str``,
    ``bool``, ``bytes``, ``date``, aware ``datetime`` (timestamp) or naive one (timestamp_ntz).
    """
    if text is None or text == "":
        return None
    name = type_name(type_json)
    try:
        if name == "string":
            return text
        if name in _INTEGRAL:
            return int(text)
        if name in ("float", "double"):
            lowered = text.strip().lower()
            if lowered in ("nan", "+nan", "-nan"):
                return math.nan
            if lowered in ("infinity", "+infinity", "inf"):
                return math.inf
            if lowered in ("-infinity", "-inf"):
                return -math.inf
            return float(text)
        if name.startswith("decimal"):
            return decimal.Decimal(text)
        if name == "boolean":
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError("not true/false")
            return lowered == "true"
        if name == "date":
            return _dt.date.fromisoformat(text.strip()[:10])
        if name == "timestamp":
            moment = _parse_datetime(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=_dt.timezone.utc)
        if name == "timestamp_ntz":
            return _parse_datetime(text).replace(tzinfo=None)
        if name == "binary":
            return text.encode("latin-1", errors="strict")
    except (ValueError, ArithmeticError, UnicodeEncodeError) as exc:
        raise CorruptLogError(
            f"partition value {text!r} of column {column!r} is not a valid {name} "
            f"(Delta partition value serialization): {exc}"
        ) from exc
    raise UnsupportedFeatureError(
        f"partition column {column!r} has type {name}, which Delta does not allow as a partition "
        "column type (allowed: string, numeric types, boolean, date, timestamp, timestamp_ntz, "
        "binary)"
    )


def _parse_datetime(text: str) -> _dt.datetime:
    cleaned = text.strip().replace("Z", "+00:00")
    if "T" not in cleaned and " " in cleaned:
        date_part, _, time_part = cleaned.partition(" ")
        cleaned = f"{date_part}T{time_part}"
    return _dt.datetime.fromisoformat(cleaned)


def serialize(value: Any) -> str | None:
    """The partition value string of a typed value (``partitionValues_parsed`` -> string map)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


__all__ = ["parse", "serialize", "type_name"]
