"""Top-level columns of a table schema (Spark's JSON form, as the Delta log stores it) by name.

Predicates, file skipping and the writer's schema checks look columns up the way Spark SQL does:
case-insensitively, keeping the table's own spelling. Working on the JSON schema rather than on a
``pyspark`` ``StructType`` keeps read planning free of Spark.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from qbeast.errors import InvalidOptionError

#: Lower-cased column name -> (name as the table spells it, Spark type name).
ColumnTypes = dict[str, tuple[str, str]]


def type_name(json_type: Any) -> str:
    """Spark's ``DataType.typeName()`` of a JSON schema type: ``"integer"``, ``"decimal"``,
    ``"timestamp"``, ``"struct"``... (parameters such as a decimal's precision dropped)."""
    if isinstance(json_type, Mapping):
        return str(json_type.get("type"))
    return str(json_type).split("(", 1)[0]


def column_types(schema: Mapping[str, Any]) -> ColumnTypes:
    """Map lower-cased top-level column names to ``(name, type name)``.

    Spark column references are case-insensitive by default; the canonical spelling is kept so
    predicates name columns exactly as the table (and the revision) do.
    """
    return {
        field["name"].lower(): (field["name"], type_name(field["type"]))
        for field in schema.get("fields", [])
    }


def resolve_name(names: Sequence[str], name: str) -> str:
    """The table's spelling of column ``name``: an exact match, else the one case-insensitive match.

    Spark resolves column names case-insensitively (``spark.sql.caseSensitive`` is false by
    default), so an index on ``Price`` must find the column ``price``, and the revision records
    the table's spelling. An unknown or ambiguous name is returned as given, for the caller to
    report with the available columns. Every place that looks up indexed columns uses this.
    """
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else name


def check_each_once(resolved: Sequence[str], given: Any, option: str = "columns_to_index") -> None:
    """Refuse a column named twice once names are resolved (``Price`` and ``price`` are one
    column): the same refusal for ``qbeast.write`` and ``convert_to_qbeast``."""
    repeated = sorted({r for r in resolved if list(resolved).count(r) > 1})
    if repeated:
        raise InvalidOptionError(
            f"{option} names column {repeated[0]!r} more than once (column names are "
            "case-insensitive)",
            option=option, value=given, allowed="each column at most once",
        )


def schema_fields(schema: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Top-level fields of a Delta/Spark JSON schema by name."""
    if not schema:
        return {}
    return {f["name"]: f for f in schema.get("fields", [])}


_NULLABILITY_KEYS = ("nullable", "containsNull", "valueContainsNull", "metadata")


def canonical_type(field_json: Mapping[str, Any]) -> str:
    """A field's type as comparable text (nullability and metadata ignored at every level)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _NULLABILITY_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(field_json["type"]), sort_keys=True)


#: Column-metadata keys starting with this belong to the engine. None is written any more
#: (a projection copies column metadata into the next table, so it cannot say which table a
#: column belongs to); every writer and reader drops the ones older versions left behind.
ENGINE_METADATA_PREFIX = "qbeast."


def _is_engine_key(key: str) -> bool:
    return key.startswith(ENGINE_METADATA_PREFIX)


def _strip_type(json_type: Any) -> Any:
    """A JSON type with the engine's keys removed from the metadata of nested struct fields."""
    if not isinstance(json_type, Mapping):
        return json_type
    kind = json_type.get("type")
    if kind == "struct":
        return {**json_type, "fields": [_strip_field(f) for f in json_type.get("fields", [])]}
    if kind == "array":
        return {**json_type, "elementType": _strip_type(json_type.get("elementType"))}
    if kind == "map":
        return {**json_type, "keyType": _strip_type(json_type.get("keyType")),
                "valueType": _strip_type(json_type.get("valueType"))}
    return json_type


def _strip_field(field: Mapping[str, Any]) -> dict[str, Any]:
    stripped = {**field, "type": _strip_type(field.get("type"))}
    if "metadata" in field:
        stripped["metadata"] = {k: v for k, v in (field["metadata"] or {}).items()
                                if not _is_engine_key(k)}
    return stripped


def without_engine_metadata(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (Spark's JSON struct) with every ``qbeast.*`` column-metadata key removed, at
    every nesting level; other metadata (comments, column mapping, generated columns) is kept."""
    return {**schema, "fields": [_strip_field(f) for f in schema.get("fields", [])]}


def engine_metadata_columns(schema: Mapping[str, Any] | None) -> list[str]:
    """Top-level columns whose metadata (theirs or a nested field's) holds a ``qbeast.*`` key."""
    if not schema:
        return []
    stripped = without_engine_metadata(schema)
    return [f["name"] for f, clean in zip(schema.get("fields", []), stripped["fields"]) if f != clean]
