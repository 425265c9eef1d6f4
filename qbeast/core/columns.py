"""Top-level columns of a table schema (Spark's JSON form, as the Delta log stores it) by name.

Predicates, file skipping and the writer's schema checks look columns up the way Spark SQL does:
case-insensitively, keeping the table's own spelling. Working on the JSON schema rather than on a
``pyspark`` ``StructType`` keeps read planning free of Spark.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
