"""Errors raised by the dbt adapter.

Each class is both a dbt exception (so dbt prints it as a normal, readable configuration error and
stops the node) and a ``qbeast.errors.QbeastError`` (so Python callers can catch every dbt-qbeast
failure with one type).
"""
from __future__ import annotations

from dbt_common.exceptions import CompilationError, DbtConfigError, DbtRuntimeError

from qbeast import InvalidOptionError, QbeastError


class QbeastProfileError(DbtConfigError, InvalidOptionError):
    """A field of the ``type: qbeast`` profile target has a value the adapter cannot use."""


class QbeastModelConfigError(DbtConfigError, InvalidOptionError):
    """A model's ``config(...)`` for the qbeast materialization is not acceptable."""


class QbeastSchemaChangeError(CompilationError, InvalidOptionError):
    """The model's columns differ from its table's and ``on_schema_change='fail'`` (dbt reports
    this as a compilation error for every adapter)."""


class QbeastRunOperationError(DbtRuntimeError, InvalidOptionError):
    """A ``dbt run-operation qbeast_*`` argument is not acceptable (names it and the allowed values)."""


#: The adapter's macros that are called inside a model, not with ``dbt run-operation``.
MODEL_MACROS = frozenset({"qbeast_sample", "qbeast_approx"})


def operation_words(operation: str) -> str:
    """How an error names what failed: ``run-operation qbeast_vacuum``, or just the macro's name
    for a macro called in a model (``qbeast_sample``): the user did not run an operation."""
    return operation if operation in MODEL_MACROS else f"run-operation {operation}"


class QbeastLocationError(DbtRuntimeError, QbeastError):
    """A model's table location holds data the model does not own (or is not a folder)."""


class QbeastCatalogBusyError(DbtRuntimeError, QbeastError):
    """The embedded catalog (Derby) is held by another process."""
