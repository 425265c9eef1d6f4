"""Validation of the arguments and options of ``qbeast.write``, before any Spark job runs.

Every check here raises :class:`qbeast.errors.InvalidOptionError` (or ``UnsupportedTypeError``)
naming the argument and the accepted values, so a bad call fails fast and writes nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qbeast import checks
from qbeast.core.skipping import parse_declaration
from qbeast.errors import InvalidOptionError, UnsupportedTypeError

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


#: Keyword options of ``qbeast.write`` that are shorthands of :class:`qbeast.CommitProperties`
#: fields: how the write commits, not how it lays data out.
COMMIT_OPTIONS = ("user_metadata", "cancelled")


@dataclass(frozen=True)
class WriteOptions:
    """The optional keyword options of ``qbeast.write`` (documented in docs/writer.md)."""

    merge_schema: bool = False
    buffer_capacity: int | None = None
    estimation_sample_rows: int | None = None
    non_finite: str = "fail"
    #: the ``skipping_indexes=`` declaration as given (checked against the table's columns by
    #: the writer, :func:`qbeast.core.skipping.parse_declaration`); None: keep the table's
    skipping_indexes: Any = None

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> WriteOptions:
        """The layout options of ``options``; the commit options among them (:data:`COMMIT_OPTIONS`)
        are accepted and left to :func:`qbeast.commit.commit_properties`."""
        allowed = {"merge_schema", "buffer_capacity", "estimation_sample_rows", "non_finite",
                   "skipping_indexes", *COMMIT_OPTIONS}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise InvalidOptionError(
                f"unknown write option(s) {unknown}; allowed options: {sorted(allowed)}",
                option=unknown[0], value=options[unknown[0]], allowed=sorted(allowed),
            )
        merge = checks.check_bool("merge_schema", options.get("merge_schema", False))
        capacity = options.get("buffer_capacity")
        if capacity is not None:
            check_positive_int("buffer_capacity", capacity)
        sample_rows = options.get("estimation_sample_rows")
        if sample_rows is not None:
            check_non_negative_int("estimation_sample_rows", sample_rows)
        non_finite = checks.check_one_of("non_finite", options.get("non_finite", "fail"), NON_FINITE_CHOICES,
                                         ignore_case=True)
        skipping = options.get("skipping_indexes")
        if skipping is not None:
            parse_declaration(skipping)  # the form now; the columns once the schema is known
        return cls(merge, capacity, sample_rows, non_finite, skipping)


#: The checks of write arguments are the engine's shared ones (one wording, structured fields);
#: these names stay importable from here for the writer.
check_positive_int = checks.check_positive_int
check_non_negative_int = checks.check_non_negative_int


def check_mode(mode: Any) -> str:
    """The normalized write mode (``append`` or ``overwrite``, case-insensitive)."""
    return checks.check_one_of("mode", mode, MODES, ignore_case=True)


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
