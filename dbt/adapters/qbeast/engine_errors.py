"""Engine errors as dbt errors, worded in the model's config keys.

The engine's :class:`qbeast.InvalidOptionError` carries the option it is about, the value given and
the allowed values as fields. Where the option is one a dbt model sets through a config key, the
adapter words the message itself from those fields (model, config key, value, allowed values), so
the engine's own wording (``columnStats``, ``mode='overwrite'``) never reaches a dbt user and the
engine can reword its messages freely. Errors without fields, or about options a model does not
set, keep the engine's text.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

from dbt_common.exceptions import DbtBaseException, DbtRuntimeError

from dbt.adapters.qbeast import interrupts
from dbt.adapters.qbeast.errors import QbeastModelConfigError, QbeastRunOperationError, operation_words

#: The engine's option names (its Python keywords and qbeast-spark's spellings) and the model
#: config key that sets each one. Options the adapter sets on its own (``mode``, ``merge_schema``,
#: ``user_metadata``, ``cancelled``) are not here: an error about them is not the model's to fix.
DBT_CONFIG_KEYS: Dict[str, str] = {
    "columns_to_index": "columns_to_index",
    "columnsToIndex": "columns_to_index",
    "cube_size": "cube_size",
    "cubeSize": "cube_size",
    "column_stats": "column_stats",
    "columnStats": "column_stats",
    "non_finite": "non_finite",
    # the keyed strategies' words (QbeastTable.merge / delete_insert)
    "on": "unique_key",
    "target_predicate": "incremental_predicates",
    "update_columns": "merge_update_columns",
    "exclude_columns": "merge_exclude_columns",
}


def allowed_words(allowed: Any) -> str:
    """The ``allowed`` field as a dbt message states it: choices comma-separated, bools as in YAML."""
    if isinstance(allowed, (list, tuple)):
        return ", ".join(_word(choice) for choice in allowed)
    return _word(allowed)


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_option_error(model: str, error: Exception) -> Optional[str]:
    """The dbt message of an engine option error, or None when its fields do not name a config key.

    ``model {name}: invalid config {key}={value}; allowed values: {allowed}``, as the adapter's own
    config checks word theirs (``model_config``).
    """
    option = getattr(error, "option", None)
    key = DBT_CONFIG_KEYS.get(option) if isinstance(option, str) else None
    if key is None:
        return None
    value = getattr(error, "value", None)
    allowed = getattr(error, "allowed", None)
    said = f"config {key} needs a value" if value is None else f"invalid config {key}={value!r}"
    if allowed is None:
        return f"model {model}: {said}"
    return f"model {model}: {said}; allowed values: {allowed_words(allowed)}"


@contextmanager
def model_errors(model: str, what: str) -> Iterator[None]:
    """Engine errors as dbt errors that name the model, in the words of the model's config.

    Whatever fails once dbt was interrupted (a cancelled Spark job, the write's own check before
    its commit) is reported as cancelled: nothing of it was committed.
    """
    from qbeast import InvalidOptionError, QbeastError

    try:
        yield
    except Exception as exc:
        if interrupts.requested():
            raise interrupts.Cancelled(f"model {model}: {what} {interrupts.CANCELLED_MESSAGE}") from exc
        if isinstance(exc, InvalidOptionError):
            raise QbeastModelConfigError(render_option_error(model, exc) or f"model {model}: {exc}") from exc
        if isinstance(exc, DbtBaseException):  # dbt's own, already worded for dbt
            raise
        if isinstance(exc, QbeastError):
            raise DbtRuntimeError(f"model {model}: {what} failed: {engine_line(exc)}") from exc
        if isinstance(exc, OSError) and exc.strerror:
            where = f" ({exc.filename})" if exc.filename else ""
            raise DbtRuntimeError(f"model {model}: {what} failed: {exc.strerror}{where}") from exc
        # anything else (a Spark job's failure, an engine bug): one line naming the model and the
        # operation, never dbt's bare "Unhandled error"; the trace stays in the cause (dbt.log)
        raise DbtRuntimeError(
            f"model {model}: {what} failed: {type(exc).__name__}: {engine_line(exc)}") from exc


@contextmanager
def operation_errors(operation: str) -> Iterator[None]:
    """Engine errors of a run-operation as dbt errors that name the operation."""
    from qbeast import QbeastError

    try:
        yield
    except QbeastError as exc:
        raise QbeastRunOperationError(
            f"{operation_words(operation)}: {in_run_operation_words(exc, engine_line(exc))}") from exc


def in_run_operation_words(error: Exception, text: str) -> str:
    """``text`` with the Python spelling of the value an option error asks for
    (``allow_short_retention=True``) in the spelling of a run-operation's ``--args``
    (``allow_short_retention: true``)."""
    option, allowed = getattr(error, "option", None), getattr(error, "allowed", None)
    if not isinstance(option, str) or allowed is None or isinstance(allowed, (list, tuple)):
        return text
    return text.replace(f"{option}={allowed!r}", f"{option}: {_word(allowed)} (in --args)")


#: a JVM exception's class name before its message (``org.apache.spark.SparkException: ...``)
_JAVA_CLASS = re.compile(r"^(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)(?::\s*|$)")
#: what a Hive server puts before the driver's own message
_HIVE_WRAPPER = "Error running query: "


def without_frames(text: str) -> str:
    """``text`` without a JVM's stack: Hive's wrapper and Java class names taken off the first
    line, and everything from the first stack frame (``at ...``, ``Caused by:``) dropped."""
    if _HIVE_WRAPPER in text:
        text = text.split(_HIVE_WRAPPER, 1)[1]
    kept = []
    for raw in text.replace("\\n", "\n").replace("\\t", "\t").splitlines():
        line = raw.strip()
        if line.startswith(("at ", "Caused by:", "JVM stacktrace")) or \
                (line.startswith("...") and line.endswith("more")):
            break
        kept.append(raw.rstrip())
    while kept and not kept[0].strip():
        kept.pop(0)
    if kept:
        first = kept[0].strip().strip("'\"")
        while True:
            stripped = _JAVA_CLASS.sub("", first, count=1)
            if stripped == first:
                break
            first = stripped
        kept[0] = first
    return "\n".join(kept).strip()


#: where a Spark error's own words end and its query plan begins: ``SQLSTATE: 42703; line 1 pos
#: 7;`` at the end of the first line, the plan on the lines after it
_BEFORE_PLAN = re.compile(r"SQLSTATE: \w+(?:; line \d+ pos \d+)?;\s*$")


def without_plan(text: str) -> str:
    """``text`` without the query plan Spark appends to an analysis error (dozens of lines for a
    model's query, none of which a user needs to see what is wrong)."""
    first, newline, _ = text.partition("\n")
    if newline and _BEFORE_PLAN.search(first):
        return first.rstrip().rstrip(";")
    return text


def statement_error(exc: BaseException) -> str:
    """What a failed SQL statement says, in one piece: the server's message (``method: thrift``)
    or the exception's, without JVM frames and without Spark's query plan."""
    first = exc.args[0] if exc.args else None
    status = getattr(first, "status", None)
    text = status.errorMessage if status is not None else str(exc)
    return without_plan(without_frames(text)) or str(exc)


def engine_line(exc: BaseException) -> str:
    """The one line of an error a dbt user reads: the message of the innermost exception the
    engine or the server raised, without JVM class names and stack frames.

    An error that came over the Thrift connection carries the server's whole Java trace
    (``HiveSQLException: Error running query: org.apache.spark.SparkException: ... at ...``):
    what the engine said is after Hive's wrapper and before the first frame.
    """
    text = getattr(exc, "msg", None) if isinstance(exc, DbtBaseException) else None
    cleaned = without_frames(text if isinstance(text, str) else str(exc))
    return next((line.strip() for line in cleaned.splitlines() if line.strip()), "(no message)")
