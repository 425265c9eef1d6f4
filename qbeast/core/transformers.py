"""Transformers: per indexed column, how to gather stats and build its Transformation (FORMAT §3).

A transformer is the *spec* half of a revision column: name, data type and kind (``linear``,
``hashing``, ``quantiles``, ``histogram``; ``empty`` for staging). The Spark layer runs every
transformer's ``stats_sql()`` expressions in one aggregate pass over the input, then hands the
resulting row (as a dict keyed by alias) to ``make_transformation``. User-provided ``columnStats``
(FORMAT §10) are parsed and validated here too, because they feed the same functions.
"""
from __future__ import annotations

import abc
import datetime as _dt
import json
import math
import random as _random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from qbeast.core.jvm_compat import jackson_json
from qbeast.core.sql import quote_identifier
from qbeast.core.transformations import (
    DEFAULT_HISTOGRAM,
    CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation,
    EmptyTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    StringHistogramTransformation,
    Transformation,
)
from qbeast.core.types import QDataType, date_to_millis, datetime_to_millis, to_canonical
from qbeast.errors import FormatError, InvalidOptionError

PACKAGE = "io.qbeast.core.transform."

#: User-selectable transformer types (FORMAT §3.7); lookup is case-insensitive.
TRANSFORMER_TYPES: tuple[str, ...] = ("linear", "hashing", "quantiles", "histogram")

__all__ = [
    "Transformer",
    "LinearTransformer",
    "HashTransformer",
    "CDFNumericQuantilesTransformer",
    "CDFStringQuantilesTransformer",
    "StringHistogramTransformer",
    "EmptyTransformer",
    "ColumnSpec",
    "TRANSFORMER_TYPES",
    "parse_columns_to_index",
    "make_transformer",
    "default_transformer_type",
    "parse_column_stats",
    "transformer_from_json_obj",
]


def _alias(column: str, suffix: str) -> str:
    return quote_identifier(f"{column}_{suffix}")


@dataclass(frozen=True)
class Transformer(abc.ABC):
    """Base class; subclasses fix ``type_name`` and the JSON shape of their Scala counterpart."""

    column_name: str

    class_name: ClassVar[str]
    type_name: ClassVar[str]

    @property
    def data_type(self) -> QDataType | None:
        """The column's QDataType (``None`` only for the staging ``EmptyTransformer``)."""
        return None

    @property
    def spec(self) -> str:
        """``"<column>:<type>"``, the key used to detect transformer changes between revisions."""
        return f"{self.column_name}:{self.type_name}"

    def stats_sql(self) -> list[str]:
        """Spark SQL aggregate expressions for the single stats pass (aliases ``<col>_<stat>``)."""
        return []

    def stats_keys(self) -> tuple[str, ...]:
        """The stats/columnStats keys this transformer reads."""
        return ()

    @abc.abstractmethod
    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        """Fit the transformation from a stats row (aliases without backticks as keys)."""

    @abc.abstractmethod
    def to_json_obj(self) -> dict[str, Any]:
        """The JSON object qbeast-spark writes for this transformer."""

    def to_json(self) -> str:
        """Compact JSON text exactly as Jackson prints it."""
        return jackson_json(self.to_json_obj())


def _require_ordered(column: str, data_type: QDataType, type_name: str) -> None:
    if not data_type.is_ordered:
        raise InvalidOptionError(
            f"column {column!r} of type {data_type.sql_name} cannot use the {type_name!r} transformer; "
            f"string columns allow: hashing, quantiles, histogram",
            option="columns_to_index", value=f"{column}:{type_name}",
            allowed=f"for {data_type.sql_name} column {column!r}: hashing, quantiles, histogram",
        )


@dataclass(frozen=True)
class _TypedTransformer(Transformer):
    """A transformer that stores its column's data type (all but Empty and string quantiles)."""

    column_type: QDataType

    #: Linear and numeric quantiles need an ordered column type.
    requires_ordered: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.requires_ordered:
            _require_ordered(self.column_name, self.column_type, self.type_name)

    @property
    def data_type(self) -> QDataType:
        return self.column_type

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "columnName": self.column_name, "dataType": self.column_type.value}


@dataclass(frozen=True)
class LinearTransformer(_TypedTransformer):
    """Min/max scaling of an ordered column (FORMAT §3.1)."""

    class_name: ClassVar[str] = PACKAGE + "LinearTransformer"
    type_name: ClassVar[str] = "linear"
    requires_ordered: ClassVar[bool] = True

    def stats_keys(self) -> tuple[str, ...]:
        return (f"{self.column_name}_min", f"{self.column_name}_max")

    def stats_sql(self) -> list[str]:
        col = quote_identifier(self.column_name)
        return [f"min({col}) AS {_alias(self.column_name, 'min')}",
                f"max({col}) AS {_alias(self.column_name, 'max')}"]

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        """Identity when the column holds one value or only nulls, else Linear with a random null value."""
        key_min, key_max = self.stats_keys()
        mn = to_canonical(stats.get(key_min), self.column_type, self.column_name)
        mx = to_canonical(stats.get(key_max), self.column_type, self.column_name)
        for key, value in ((key_min, mn), (key_max, mx)):
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidOptionError(
                    f"column {self.column_name!r} holds NaN or infinite values ({key} is {value!r}), "
                    "which a linear index cannot place; filter them out, index the column with "
                    "'hashing', or write with non_finite='null' to store them as null"
                )
        if mn is None or mx is None or mn == mx:
            return IdentityTransformation(mn if mn is not None else mx, self.column_type)
        if mx < mn:
            raise InvalidOptionError(f"stats {key_min!r}={mn!r} is greater than {key_max!r}={mx!r}")
        return LinearTransformation.create(mn, mx, self.column_type, rng)


@dataclass(frozen=True)
class HashTransformer(_TypedTransformer):
    """Murmur hashing of the value's text; needs no stats (FORMAT §3.4)."""

    class_name: ClassVar[str] = PACKAGE + "HashTransformer"
    type_name: ClassVar[str] = "hashing"

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        return HashTransformation.create(rng)


def _quantiles_from_stats(stats: Mapping[str, Any], key: str) -> list[Any] | None:
    value = stats.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise InvalidOptionError(f"columnStats key {key!r} must be an array, got {value!r}",
                                 option="column_stats", value={key: value}, allowed=f"an array for {key!r}")
    return list(value)


@dataclass(frozen=True)
class CDFNumericQuantilesTransformer(_TypedTransformer):
    """Quantile CDF of an ordered column; quantiles come only from ``columnStats`` (FORMAT §3.5)."""

    class_name: ClassVar[str] = PACKAGE + "CDFNumericQuantilesTransformer"
    type_name: ClassVar[str] = "quantiles"
    requires_ordered: ClassVar[bool] = True

    def stats_keys(self) -> tuple[str, ...]:
        return (f"{self.column_name}_quantiles",)

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        """Empty when no quantiles are known (the revision logic then reports the missing key)."""
        (key,) = self.stats_keys()
        values = _quantiles_from_stats(stats, key)
        if values is None:
            return EmptyTransformation()
        return _build(key, lambda: CDFNumericQuantilesTransformation(
            tuple(_quantile_number(key, v, self.column_type) for v in values), self.column_type))

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "columnName": self.column_name,
                "orderedDataType": self.column_type.value}


def _quantile_number(key: str, value: Any, data_type: QDataType) -> float:
    """One numeric quantile as the double Scala stores (temporal strings become epoch millis)."""
    if isinstance(value, str) and data_type in (QDataType.TIMESTAMP, QDataType.DATE):
        return float(_parse_temporal(key, value, data_type))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidOptionError(
            f"columnStats key {key!r} must hold finite numbers for {data_type.sql_name}, got {value!r}",
            option="column_stats", value={key: value},
            allowed=f"finite numbers in {key!r} ({data_type.sql_name} column)")
    return float(value)


def _build(key: str, factory: Any) -> Transformation:
    try:
        return factory()
    except FormatError as exc:
        raise InvalidOptionError(f"columnStats key {key!r}: {exc}", option="column_stats", value=key,
                                 allowed=f"values of {key!r} that form a valid transformation ({exc})") from exc


@dataclass(frozen=True)
class CDFStringQuantilesTransformer(Transformer):
    """Quantile CDF of a string column; quantiles come only from ``columnStats`` (FORMAT §3.5)."""

    class_name: ClassVar[str] = PACKAGE + "CDFStringQuantilesTransformer"
    type_name: ClassVar[str] = "quantiles"

    @property
    def data_type(self) -> QDataType:
        return QDataType.STRING

    def stats_keys(self) -> tuple[str, ...]:
        return (f"{self.column_name}_quantiles",)

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        (key,) = self.stats_keys()
        values = _quantiles_from_stats(stats, key)
        if values is None:
            return EmptyTransformation()
        if any(not isinstance(v, str) for v in values):
            raise InvalidOptionError(f"columnStats key {key!r} must be an array of strings, got {values!r}",
                                     option="column_stats", value={key: values},
                                     allowed=f"an array of strings in {key!r}")
        return _build(key, lambda: CDFStringQuantilesTransformation(tuple(values)))

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "columnName": self.column_name}


@dataclass(frozen=True)
class StringHistogramTransformer(_TypedTransformer):
    """Deprecated histogram binning of a string column; default boundaries "a".."z" (FORMAT §3.6)."""

    class_name: ClassVar[str] = PACKAGE + "StringHistogramTransformer"
    type_name: ClassVar[str] = "histogram"

    def __post_init__(self) -> None:
        if self.column_type is not QDataType.STRING:
            raise InvalidOptionError(
                f"column {self.column_name!r} of type {self.column_type.sql_name} cannot use the 'histogram' "
                f"transformer; it is only for string columns",
                option="columns_to_index", value=f"{self.column_name}:histogram",
                allowed=f"for {self.column_type.sql_name} column {self.column_name!r}: linear, hashing, "
                        "quantiles ('histogram' is only for string columns)",
            )

    def stats_keys(self) -> tuple[str, ...]:
        return (f"{self.column_name}_histogram",)

    def stats_sql(self) -> list[str]:
        letters = ", ".join(f"'{c}'" for c in DEFAULT_HISTOGRAM)
        return [f"array({letters}) AS {_alias(self.column_name, 'histogram')}"]

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        (key,) = self.stats_keys()
        values = _quantiles_from_stats(stats, key)
        if values is None:
            return StringHistogramTransformation(DEFAULT_HISTOGRAM)
        if any(not isinstance(v, str) for v in values):
            raise InvalidOptionError(f"columnStats key {key!r} must be an array of strings, got {values!r}",
                                     option="column_stats", value={key: values},
                                     allowed=f"an array of strings in {key!r}")
        return _build(key, lambda: StringHistogramTransformation(tuple(values)))


@dataclass(frozen=True)
class EmptyTransformer(Transformer):
    """Staging placeholder: a column name and nothing else (FORMAT §3.3)."""

    class_name: ClassVar[str] = PACKAGE + "EmptyTransformer"
    type_name: ClassVar[str] = "empty"

    def make_transformation(self, stats: Mapping[str, Any], rng: _random.Random | None = None) -> Transformation:
        return EmptyTransformation()

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "columnName": self.column_name}


# --------------------------------------------------------------------------------------------
# registry, defaults and the columnsToIndex spec
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnSpec:
    """One entry of ``columnsToIndex``: a column and an optional explicit transformer type."""

    name: str
    type_name: str | None = None

    @property
    def text(self) -> str:
        """The entry as written in ``columnsToIndex``: ``"col"`` or ``"col:type"``."""
        return self.name if self.type_name is None else f"{self.name}:{self.type_name}"


def default_transformer_type(data_type: QDataType) -> str:
    """Ordered types default to ``linear``, strings to ``hashing`` (FORMAT §3.0)."""
    return "linear" if data_type.is_ordered else "hashing"


def _normalize_type_name(type_name: str, column: str) -> str:
    lowered = type_name.lower()
    if lowered not in TRANSFORMER_TYPES:
        raise InvalidOptionError(
            f"columnsToIndex: unknown transformer type {type_name!r} for column {column!r}; "
            f"valid types: {', '.join(TRANSFORMER_TYPES)}",
            option="columns_to_index", value=f"{column}:{type_name}", allowed=list(TRANSFORMER_TYPES),
        )
    return lowered


def make_transformer(column: str, type_name: str | None, data_type: QDataType) -> Transformer:
    """Build the transformer for ``column`` (default type when ``type_name`` is None)."""
    chosen = default_transformer_type(data_type) if type_name is None else _normalize_type_name(type_name, column)
    if chosen == "linear":
        return LinearTransformer(column, data_type)
    if chosen == "hashing":
        return HashTransformer(column, data_type)
    if chosen == "quantiles":
        if data_type.is_ordered:
            return CDFNumericQuantilesTransformer(column, data_type)
        return CDFStringQuantilesTransformer(column)
    return StringHistogramTransformer(column, data_type)


def parse_columns_to_index(spec: str | Sequence[str]) -> list[ColumnSpec]:
    """Parse ``columnsToIndex``: a comma-separated string or a list of ``"col"`` / ``"col:type"``.

    Whitespace around entries is ignored (a friendlier reading than qbeast-spark, which keeps it
    and then fails to find the column). Types are case-insensitive; ``hash`` and ``quantile`` are
    rejected exactly like qbeast-spark does.
    """
    if isinstance(spec, str):
        entries = spec.split(",")
    elif isinstance(spec, Sequence) and all(isinstance(e, str) for e in spec):
        entries = list(spec)
    else:
        raise InvalidOptionError(
            f"columnsToIndex must be a comma-separated string or a list of strings, got {spec!r}",
            option="columns_to_index", value=spec, allowed="a comma-separated string or a list of strings",
        )
    result: list[ColumnSpec] = []
    seen: set[str] = set()
    for raw in entries:
        entry = raw.strip()
        if not entry:
            raise InvalidOptionError(f"columnsToIndex {spec!r} has an empty column entry",
                                     option="columns_to_index", value=spec, allowed="no empty entry")
        parts = entry.split(":")
        if len(parts) > 2 or not parts[0].strip() or (len(parts) == 2 and not parts[1].strip()):
            raise InvalidOptionError(
                f"columnsToIndex entry {entry!r} is malformed; use 'column' or 'column:type' with type one of "
                f"{', '.join(TRANSFORMER_TYPES)}",
                option="columns_to_index", value=spec,
                allowed=f"entries 'column' or 'column:type' with type one of {', '.join(TRANSFORMER_TYPES)}",
            )
        name = parts[0].strip()
        type_name = _normalize_type_name(parts[1].strip(), name) if len(parts) == 2 else None
        if name in seen:
            raise InvalidOptionError(f"columnsToIndex lists column {name!r} more than once",
                                     option="columns_to_index", value=spec, allowed="each column at most once")
        seen.add(name)
        result.append(ColumnSpec(name, type_name))
    if not result:
        raise InvalidOptionError("columnsToIndex is empty; name at least one column",
                                 option="columns_to_index", value=spec, allowed="at least one column")
    return result


# --------------------------------------------------------------------------------------------
# columnStats
# --------------------------------------------------------------------------------------------

_STAT_SUFFIXES = ("min", "max", "quantiles", "histogram")


def parse_column_stats(column_stats: Mapping[str, Any] | str | None,
                       transformers: Sequence[Transformer]) -> dict[str, Any]:
    """Validate user ``columnStats`` against the transformers and return canonical values.

    Accepts a dict or its JSON string. Keys are ``<col>_min``/``<col>_max`` (linear columns;
    numbers, or for timestamps ``"yyyy-MM-dd HH:mm:ss[.SSSSSS]['Z']"`` strings read as UTC and for
    dates ``"yyyy-MM-dd"``), ``<col>_quantiles`` (array) and ``<col>_histogram`` (array of strings).
    Unknown keys and mistyped values raise ``InvalidOptionError`` naming the key.
    """
    if column_stats is None or column_stats == "" or column_stats == {}:
        return {}
    if isinstance(column_stats, str):
        try:
            parsed = json.loads(column_stats)
        except json.JSONDecodeError as exc:
            raise InvalidOptionError(f"columnStats is not valid JSON: {exc}", option="column_stats",
                                     value=column_stats, allowed="a JSON object") from exc
    else:
        parsed = column_stats
    if not isinstance(parsed, Mapping):
        raise InvalidOptionError(f"columnStats must be a JSON object, got {parsed!r}",
                                 option="column_stats", value=column_stats, allowed="a JSON object")
    accepted: dict[str, tuple[Transformer, str]] = {}
    for t in transformers:
        for key in t.stats_keys():
            accepted[key] = (t, key[len(t.column_name) + 1:])
    result: dict[str, Any] = {}
    for key, value in parsed.items():
        if key not in accepted:
            raise InvalidOptionError(
                f"columnStats key {key!r} does not match an indexed column's stat; "
                f"valid keys: {', '.join(accepted) or '(none for these transformers)'}",
                option="column_stats", value={key: value},
                allowed=f"keys {', '.join(accepted) or '(none for these indexed columns)'}",
            )
        if value is None:
            continue
        transformer, suffix = accepted[key]
        result[key] = _stat_value(key, value, suffix, transformer)
    return result


def _stat_value(key: str, value: Any, suffix: str, transformer: Transformer) -> Any:
    data_type = transformer.data_type
    assert data_type is not None
    if suffix in ("min", "max"):
        if isinstance(value, str) and data_type in (QDataType.TIMESTAMP, QDataType.DATE):
            return _parse_temporal(key, value, data_type)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidOptionError(
                f"columnStats key {key!r} must be a number for {data_type.sql_name}, got {value!r}",
                option="column_stats", value={key: value}, allowed=f"a number in {key!r} ({data_type.sql_name} column)")
        if data_type in (QDataType.TIMESTAMP, QDataType.DATE):
            raise InvalidOptionError(
                f"columnStats key {key!r} must be a string like '2024-01-31 00:00:00.000000Z' "
                f"for {data_type.sql_name}, got {value!r}",
                option="column_stats", value={key: value},
                allowed=f"a string like '2024-01-31 00:00:00.000000Z' in {key!r} ({data_type.sql_name} column)",
            )
        if data_type in (QDataType.INTEGER, QDataType.LONG) and isinstance(value, float):
            raise InvalidOptionError(
                f"columnStats key {key!r} must be an integer for {data_type.sql_name}, got {value!r}",
                option="column_stats", value={key: value}, allowed=f"an integer in {key!r} ({data_type.sql_name} column)")
        return to_canonical(value, data_type, key)
    if not isinstance(value, list) or len(value) < 2:
        raise InvalidOptionError(f"columnStats key {key!r} must be an array of at least 2 values, got {value!r}",
                                 option="column_stats", value={key: value},
                                 allowed=f"an array of at least 2 values in {key!r}")
    if suffix == "histogram" or not data_type.is_ordered:
        if any(not isinstance(v, str) for v in value):
            raise InvalidOptionError(f"columnStats key {key!r} must be an array of strings, got {value!r}",
                                     option="column_stats", value={key: value},
                                     allowed=f"an array of strings in {key!r}")
        return list(value)
    return [_quantile_number(key, v, data_type) for v in value]


def _parse_temporal(key: str, text: str, data_type: QDataType) -> int:
    cleaned = text.strip()
    if cleaned.endswith("Z"):
        cleaned = cleaned[:-1]
    try:
        if data_type is QDataType.DATE:
            return date_to_millis(_dt.date.fromisoformat(cleaned[:10]) if len(cleaned) >= 10 else _dt.date.fromisoformat(cleaned))
        return datetime_to_millis(_dt.datetime.fromisoformat(cleaned))
    except ValueError as exc:
        raise InvalidOptionError(
            f"columnStats key {key!r}: cannot read {text!r} as a {data_type.sql_name} "
            f"(expected 'yyyy-MM-dd' or 'yyyy-MM-dd HH:mm:ss.SSSSSSZ')",
            option="column_stats", value={key: text},
            allowed=f"'yyyy-MM-dd' or 'yyyy-MM-dd HH:mm:ss.SSSSSSZ' in {key!r} ({data_type.sql_name} column)",
        ) from exc


# --------------------------------------------------------------------------------------------
# polymorphic JSON
# --------------------------------------------------------------------------------------------


def transformer_from_json_obj(obj: Any) -> Transformer:
    """Decode one transformer object by its ``className``; unknown names are a FormatError."""
    if not isinstance(obj, dict):
        raise FormatError(f"a transformer must be a JSON object, got {obj!r}")
    name = obj.get("className")
    column = obj.get("columnName")
    if name not in _TRANSFORMER_CLASSES:
        raise FormatError(
            f"unknown transformer className {name!r}; expected one of {', '.join(sorted(_TRANSFORMER_CLASSES))}"
        )
    if not isinstance(column, str):
        raise FormatError(f"{name} JSON needs a string 'columnName', got {column!r}")
    cls = _TRANSFORMER_CLASSES[name]
    try:
        if cls in (EmptyTransformer, CDFStringQuantilesTransformer):
            return cls(column)
        type_key = "orderedDataType" if cls is CDFNumericQuantilesTransformer else "dataType"
        if type_key not in obj:
            raise FormatError(f"{name} JSON lacks the field {type_key!r}")
        return cls(column, QDataType.from_json_name(obj[type_key]))
    except InvalidOptionError as exc:
        raise FormatError(f"{name} JSON is invalid: {exc}") from exc


_TRANSFORMER_CLASSES: dict[str, type] = {
    cls.class_name: cls
    for cls in (LinearTransformer, HashTransformer, CDFNumericQuantilesTransformer,
                CDFStringQuantilesTransformer, StringHistogramTransformer, EmptyTransformer)
}
