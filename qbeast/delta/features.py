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

from collections.abc import Iterable, Mapping
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
#: Writer features this engine implements (or that need nothing from a writer that adds files).
WRITE_SAFE_FEATURES = frozenset({"appendOnly", "timestampNtz", "vacuumProtocolCheck"})


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


def _refuse(operation: str, features: Iterable[str], why: str = "") -> None:
    names = sorted(features)
    if names:
        raise UnsupportedFeatureError(
            f"cannot {operation} this Delta table: it uses protocol feature(s) {names}, which "
            f"dbt-qbeast does not implement{why}. Supported for reading: "
            f"{sorted(READ_SAFE_FEATURES | {'columnMapping (mode none)', 'deletionVectors (unused)'})}; "
            f"for writing: {sorted(WRITE_SAFE_FEATURES | {'invariants (none declared)'})}"
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


def _features_in_use(
    features: set[str], metadata: Metadata | None, files: Mapping[str, AddFile] | None
) -> set[str]:
    """The subset of ``features`` that the table actually relies on right now."""
    config = metadata.configuration if metadata is not None else {}
    field_meta = _schema_field_metadata(metadata) if metadata is not None else []
    used = set()
    for feature in features:
        if feature == "columnMapping":
            if config.get("delta.columnMapping.mode", "none") != "none":
                used.add(feature)
        elif feature == "deletionVectors":
            if files is None or any(f.deletion_vector is not None for f in files.values()):
                used.add(feature)
        elif feature == "invariants":
            if any("delta.invariants" in m for m in field_meta):
                used.add(feature)
        elif feature == "checkConstraints":
            if any(k.startswith("delta.constraints.") for k in config):
                used.add(feature)
        elif feature == "changeDataFeed":
            if config.get("delta.enableChangeDataFeed", "false").lower() == "true":
                used.add(feature)
        elif feature == "generatedColumns":
            if any("delta.generationExpression" in m for m in field_meta):
                used.add(feature)
        elif feature == "identityColumns":
            if any(any(k.startswith("delta.identity.") for k in m) for m in field_meta):
                used.add(feature)
        else:
            used.add(feature)
    return used


def check_readable(
    protocol: Protocol, metadata: Metadata | None, files: Mapping[str, AddFile] | None = None
) -> None:
    """Refuse to read the data of a table whose files a plain parquet scan would misread."""
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"cannot read this Delta table: minReaderVersion {protocol.min_reader_version} is "
            f"newer than the highest supported version {MAX_READER_VERSION}"
        )
    unknown = reader_features(protocol) - READ_SAFE_FEATURES
    _refuse("read", _features_in_use(unknown, metadata, files))


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
    unknown = writer_features(protocol) - WRITE_SAFE_FEATURES
    _refuse("write", _features_in_use(unknown, metadata, files))


def describe_protocol(protocol: Protocol) -> str:
    """One-line human summary, e.g. ``reader 1 / writer 2 (appendOnly, invariants)``."""
    features = sorted(reader_features(protocol) | writer_features(protocol))
    suffix = f" ({', '.join(features)})" if features else ""
    return f"reader {protocol.min_reader_version} / writer {protocol.min_writer_version}{suffix}"
