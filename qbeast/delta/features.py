"""Protocol gating: which Delta features this engine can honour, per operation.

A table announces what a reader or writer must understand through its protocol: legacy version
numbers (reader 1-2, writer 1-6, each implying a fixed set of features) or, from reader 3 / writer
7 on, explicit feature lists. Ignoring a feature silently gives wrong answers (rows that a
deletion vector removed come back, renamed columns read as nulls...), so every operation checks
first and refuses with :class:`UnsupportedFeatureError` naming the feature.

Several features only matter when they are actually *used*; a table that merely enables them is
handled normally. For instance ``deletionVectors`` is fine to read as long as no active file
carries a deletion vector, and ``changeDataFeed`` only binds writers when
``delta.enableChangeDataFeed`` is true.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qbeast.delta.actions import AddFile, Metadata, Protocol
from qbeast.delta.errors import UnsupportedFeatureError

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

# Features implied by the legacy protocol versions (before explicit feature lists).
_LEGACY_READER = {1: set(), 2: {"columnMapping"}}
_LEGACY_WRITER = {
    1: set(),
    2: {"appendOnly", "invariants"},
    3: {"appendOnly", "invariants", "checkConstraints"},
    4: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"},
    5: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "columnMapping"},
    6: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "columnMapping", "identityColumns"},
}

#: Reader features whose presence never changes what a plain parquet scan returns.
READ_SAFE_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "domainMetadata"})
#: Reader features this engine implements when they are in use (see :mod:`qbeast.delta.scan`).
READ_IMPLEMENTED = {
    "columnMapping": "mode 'name' (mode 'id' is refused)",
    "variantType": "variant columns read as Spark VARIANT",
    "variantType-preview": "variant columns read as Spark VARIANT",
}
#: Reader features that are fine until the table actually uses them.
READ_REFUSED_WHEN_USED = {
    "deletionVectors": "an active file carries a deletion vector",
    "typeWidening": "a column's type was widened (delta.typeChanges)",
    "typeWidening-preview": "a column's type was widened (delta.typeChanges)",
    "variantShredding": "the table has variant columns, whose files may be shredded",
    "variantShredding-preview": "the table has variant columns, whose files may be shredded",
}
#: Writer features this engine implements (or that need nothing from a writer that adds files).
WRITE_SAFE_FEATURES = frozenset({"appendOnly", "timestampNtz", "vacuumProtocolCheck"})

COLUMN_MAPPING_MODE_KEY = "delta.columnMapping.mode"


def reader_features(protocol: Protocol) -> set[str]:
    """The reader features a protocol requires (legacy versions translated to features)."""
    if protocol.min_reader_version >= 3:
        return set(protocol.reader_features or [])
    return set(_LEGACY_READER.get(protocol.min_reader_version, set()))


def writer_features(protocol: Protocol) -> set[str]:
    """The writer features a protocol requires (legacy versions translated to features)."""
    if protocol.min_writer_version >= 7:
        return set(protocol.writer_features or [])
    return set(_LEGACY_WRITER.get(protocol.min_writer_version, set()))


def column_mapping_mode(protocol: Protocol, metadata: Metadata) -> str:
    """The column mapping mode readers must honour: ``none``, ``name`` or ``id``.

    The table property only counts when the protocol supports the feature (reader version 2,
    or ``columnMapping`` among the reader features): some writers set the property on tables
    whose files use the display names, and such tables are read by display name.
    """
    if "columnMapping" not in reader_features(protocol):
        return "none"
    return metadata.configuration.get(COLUMN_MAPPING_MODE_KEY, "none").strip().lower() or "none"


def _supported_text() -> str:
    implemented = [f"{name} ({how})" for name, how in sorted(READ_IMPLEMENTED.items())]
    unused = [f"{name} (while unused)" for name in sorted(READ_REFUSED_WHEN_USED)]
    return (
        f"supported for reading: {sorted(READ_SAFE_FEATURES) + implemented + unused}; "
        f"for writing additionally: {sorted(WRITE_SAFE_FEATURES | {'invariants (none declared)'})}"
    )


def _refuse(operation: str, reasons: Mapping[str, str]) -> None:
    if reasons:
        details = "; ".join(f"{name}: {why}" if why else name for name, why in sorted(reasons.items()))
        raise UnsupportedFeatureError(
            f"cannot {operation} this Delta table: it uses protocol feature(s) {sorted(reasons)}, "
            f"which dbt-qbeast does not implement for this ({details}). {_supported_text()}"
        )


def _schema_field_metadata(metadata: Metadata) -> list[dict[str, Any]]:
    """Metadata maps of every field, nested ones included (where invariants etc. live)."""
    out: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if "metadata" in node and isinstance(node["metadata"], dict):
                out.append(node["metadata"])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(metadata.schema)
    return out


def _has_type(metadata: Metadata, wanted: str) -> bool:
    """Whether a column (at any nesting level) has the primitive type ``wanted``."""
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        if node == wanted:
            found = True
        elif isinstance(node, dict):
            for key in ("type", "elementType", "keyType", "valueType"):
                if key in node:
                    visit(node[key])
            for child in node.get("fields", []) if isinstance(node.get("fields"), list) else []:
                visit(child)

    visit(metadata.schema)
    return found


def _read_problems(
    protocol: Protocol, metadata: Metadata | None, files: Mapping[str, AddFile] | None
) -> dict[str, str]:
    """Reader features that would make a plain scan wrong, with the reason (empty = readable)."""
    problems: dict[str, str] = {}
    for feature in reader_features(protocol) - READ_SAFE_FEATURES:
        if feature == "columnMapping":
            mode = column_mapping_mode(protocol, metadata) if metadata is not None else "none"
            if mode not in ("none", "name"):
                problems[feature] = f"mode {mode!r} (columns resolved by parquet field id)"
        elif feature in ("variantType", "variantType-preview"):
            continue
        elif feature in READ_REFUSED_WHEN_USED:
            if _feature_used(feature, metadata, files):
                problems[feature] = READ_REFUSED_WHEN_USED[feature]
        else:
            problems[feature] = "unknown to this engine"
    return problems


def _feature_used(feature: str, metadata: Metadata | None, files: Mapping[str, AddFile] | None) -> bool:
    if feature == "deletionVectors":
        return files is None or any(f.deletion_vector is not None for f in files.values())
    if metadata is None:
        return True
    if feature.startswith("typeWidening"):
        return any("delta.typeChanges" in m for m in _schema_field_metadata(metadata))
    if feature.startswith("variantShredding"):
        return _has_type(metadata, "variant")
    return True


def _write_problems(
    protocol: Protocol, metadata: Metadata | None, files: Mapping[str, AddFile] | None
) -> dict[str, str]:
    """Writer features whose rules a commit of this engine could break, with the reason."""
    config = metadata.configuration if metadata is not None else {}
    field_meta = _schema_field_metadata(metadata) if metadata is not None else []
    problems: dict[str, str] = {}
    for feature in writer_features(protocol) - WRITE_SAFE_FEATURES:
        if feature == "columnMapping":
            mode = column_mapping_mode(protocol, metadata) if metadata is not None else "none"
            if mode != "none" or config.get(COLUMN_MAPPING_MODE_KEY, "none") != "none":
                problems[feature] = f"mode {config.get(COLUMN_MAPPING_MODE_KEY)!r}"
        elif feature == "deletionVectors":
            if _feature_used(feature, metadata, files):
                problems[feature] = READ_REFUSED_WHEN_USED[feature]
        elif feature == "invariants":
            if any("delta.invariants" in m for m in field_meta):
                problems[feature] = "a column declares an invariant"
        elif feature == "checkConstraints":
            if any(k.startswith("delta.constraints.") for k in config):
                problems[feature] = "CHECK constraints are declared"
        elif feature == "changeDataFeed":
            if config.get("delta.enableChangeDataFeed", "false").lower() == "true":
                problems[feature] = "delta.enableChangeDataFeed is true"
        elif feature == "generatedColumns":
            if any("delta.generationExpression" in m for m in field_meta):
                problems[feature] = "a column is generated"
        elif feature == "identityColumns":
            if any(any(k.startswith("delta.identity.") for k in m) for m in field_meta):
                problems[feature] = "a column is an identity column"
        elif feature in ("variantType", "variantType-preview"):
            if metadata is None or _has_type(metadata, "variant"):
                problems[feature] = "the table has variant columns"
        elif feature.startswith("typeWidening") or feature.startswith("variantShredding"):
            if _feature_used(feature, metadata, files):
                problems[feature] = READ_REFUSED_WHEN_USED[feature]
        else:
            problems[feature] = "not implemented by this engine's writer"
    return problems


def check_readable(
    protocol: Protocol, metadata: Metadata | None, files: Mapping[str, AddFile] | None = None
) -> None:
    """Refuse to read the data of a table whose files a plain parquet scan would misread."""
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"cannot read this Delta table: minReaderVersion {protocol.min_reader_version} is "
            f"newer than the highest supported version {MAX_READER_VERSION}"
        )
    _refuse("read", _read_problems(protocol, metadata, files))


def check_writable(
    protocol: Protocol, metadata: Metadata | None, files: Mapping[str, AddFile] | None = None
) -> None:
    """Refuse to commit to (or vacuum, or checkpoint) a table with features we would break."""
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"cannot write this Delta table: minWriterVersion {protocol.min_writer_version} is "
            f"newer than the highest supported version {MAX_WRITER_VERSION}"
        )
    check_readable(protocol, metadata, files)
    _refuse("write", _write_problems(protocol, metadata, files))


def describe_protocol(protocol: Protocol) -> str:
    """One-line human summary, e.g. ``reader 1 / writer 2 (appendOnly, invariants)``."""
    features = sorted(reader_features(protocol) | writer_features(protocol))
    suffix = f" ({', '.join(features)})" if features else ""
    return f"reader {protocol.min_reader_version} / writer {protocol.min_writer_version}{suffix}"
