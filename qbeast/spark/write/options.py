"""Validation of the arguments and options of ``qbeast.write``, before any Spark job runs.

Every check here raises :class:`qbeast.errors.InvalidOptionError` (or ``UnsupportedTypeError``)
naming the argument and the accepted values, so a bad call fails fast and writes nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from qbeast import checks
from qbeast.errors import InvalidOptionError, UnsupportedTypeError, check_cancelled

MODES = ("append", "overwrite")
#: What a write does with NaN and infinities in indexed float/double columns (option
#: ``non_finite``): refuse them (a linear index cannot place them), or store them as null.
NON_FINITE_CHOICES = ("fail", "null")

#: Internal columns added during the write; user columns may not use these names.
WEIGHT_COLUMN = "_qbeast_weight"
FILE_COLUMN = "_qbeast_file"
CUBE_COLUMN = "_qbeast_cube"
ASSIGNMENT_COLUMN = "_qbeast_assignment"
RESERVED_COLUMNS = (WEIGHT_COLUMN, FILE_COLUMN, CUBE_COLUMN, ASSIGNMENT_COLUMN)
#: Prefix of the folder inside the table folder where a write's files are produced before they
#: are moved to the table root (``qbeast.spark.write.staging``); vacuum removes abandoned ones.
STAGING_PREFIX = "_qbeast_staging_"

#: Spark types that can be stored in a Qbeast (Delta protocol 1/2) table as non-indexed columns.
_STORABLE_REJECTED = ("timestamp_ntz", "interval", "variant", "void", "null", "calendar")


@dataclass(frozen=True)
class WriteOptions:
    """The optional keyword options of ``qbeast.write`` (documented in docs/writer.md)."""

    merge_schema: bool = False
    buffer_capacity: int | None = None
    user_metadata: str | None = None
    estimation_sample_rows: int | None = None
    non_finite: str = "fail"
    #: Called between the write's phases and right before its commit; True abandons the write
    #: (``WriteCancelled``, files deleted, nothing committed). How a caller such as dbt's Ctrl-C
    #: handling stops a write without racing its commit.
    cancelled: Callable[[], bool] | None = None

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> WriteOptions:
        allowed = {"merge_schema", "buffer_capacity", "user_metadata", "estimation_sample_rows",
                   "non_finite", "cancelled"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise InvalidOptionError(
                f"unknown write option(s) {unknown}; allowed options: {sorted(allowed)}"
            )
        merge = options.get("merge_schema", False)
        if not isinstance(merge, bool):
            raise InvalidOptionError(f"merge_schema must be True or False, got {merge!r}")
        capacity = options.get("buffer_capacity")
        if capacity is not None:
            check_positive_int("buffer_capacity", capacity)
        metadata = options.get("user_metadata")
        if metadata is not None and not isinstance(metadata, str):
            raise InvalidOptionError(f"user_metadata must be a string, got {metadata!r}")
        sample_rows = options.get("estimation_sample_rows")
        if sample_rows is not None:
            check_non_negative_int("estimation_sample_rows", sample_rows)
        non_finite = options.get("non_finite", "fail")
        if not isinstance(non_finite, str) or non_finite.lower() not in NON_FINITE_CHOICES:
            raise InvalidOptionError(
                f"non_finite must be one of {list(NON_FINITE_CHOICES)}, got {non_finite!r}"
            )
        cancelled = options.get("cancelled")
        if cancelled is not None and not callable(cancelled):
            raise InvalidOptionError(f"cancelled must be a callable returning a bool, got {cancelled!r}")
        return cls(merge, capacity, metadata, sample_rows, non_finite.lower(), cancelled)

    def check_cancelled(self, path: str, phase: str) -> None:
        """Raise ``WriteCancelled`` when the caller's ``cancelled`` callback says so."""
        check_cancelled(self.cancelled, f"write to {path}", phase)


#: The checks of write arguments are the engine's shared ones (one wording, structured fields);
#: these names stay importable from here for the writer.
check_positive_int = checks.check_positive_int
check_non_negative_int = checks.check_non_negative_int


def check_mode(mode: Any) -> str:
    """The normalized write mode (``append`` or ``overwrite``, case-insensitive)."""
    return checks.check_one_of("mode", mode, MODES, ignore_case=True)


def check_txn(app_id: Any, version: Any) -> tuple[str, int] | None:
    """The idempotent-write pair, or ``None``; both or neither must be given."""
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        missing = "txn_app_id" if app_id is None else "txn_version"
        raise InvalidOptionError(
            "txn_app_id and txn_version must be given together (idempotent writes), got "
            f"txn_app_id={app_id!r}, txn_version={version!r}",
            option=missing, value=None,
            allowed="a value, given together with " + ("txn_version" if app_id is None else "txn_app_id"),
        )
    if not isinstance(app_id, str) or not app_id:  # blanks pass, as they always did
        raise checks.invalid("txn_app_id", app_id, "a non-empty string", "a non-empty string")
    return app_id, checks.check_non_negative_int("txn_version", version)


def check_storable_schema(schema) -> None:
    """Reject column types the table protocol cannot hold and internal column names."""
    for field in schema.fields:
        if field.name in RESERVED_COLUMNS:
            raise InvalidOptionError(
                f"column {field.name!r} clashes with a column the writer adds internally; "
                f"rename it (reserved names: {list(RESERVED_COLUMNS)})"
            )
        simple = field.dataType.simpleString()
        if any(simple.startswith(bad) or f"<{bad}" in simple or f":{bad}" in simple
               for bad in _STORABLE_REJECTED):
            raise UnsupportedTypeError(
                f"column {field.name!r} has type {simple}, which a Qbeast table (Delta protocol "
                "1/2) cannot store; cast it (e.g. timestamp_ntz to timestamp, intervals to long)"
            )
