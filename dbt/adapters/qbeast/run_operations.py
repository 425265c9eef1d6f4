"""The table operations behind ``dbt run-operation qbeast_*``: argument checks, then the public API.

Arguments arrive from ``--args`` YAML, so a number may come as a string and a list as a scalar;
each is checked here with a message that names the operation, the argument and the allowed
values before the engine is called (the engine checks again). Results are logged as the result
objects' readable text and returned as plain dicts.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.qbeast.errors import QbeastRunOperationError, operation_words
from dbt.adapters.qbeast.sql_literals import sql_string

logger = AdapterLogger("Qbeast")

SQL_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_SCHEMA_NAME = SQL_NAME


def argument_error(operation: str, argument: str, value: Any, allowed: str) -> QbeastRunOperationError:
    return QbeastRunOperationError(
        f"{operation_words(operation)}: invalid argument {argument}={value!r}; allowed values: {allowed}"
    )


def check_int(operation: str, argument: str, value: Any, minimum: int, optional: bool = True) -> Optional[int]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise argument_error(operation, argument, value, f"an integer >= {minimum}" + (" or none" if optional else ""))
    return value


def check_number(operation: str, argument: str, value: Any, low: float, high: Optional[float],
                 low_open: bool) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bounds = f"({low}, {high}]" if high is not None else f">= {low}"
        raise argument_error(operation, argument, value, f"a number in {bounds}" if high is not None else f"a number {bounds}")
    return float(value)


def check_bool(operation: str, argument: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise argument_error(operation, argument, value, "true, false")
    return value


def check_files(operation: str, value: Any) -> Optional[List[str]]:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise argument_error(operation, "files", value, "none or a non-empty list of file paths as the Delta log names them")
    return list(value)


def check_path(operation: str, argument: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise argument_error(operation, argument, value, "a model name, schema.identifier, a relation or a table path")
    return value.strip()


def catalog_location(engine: Any, operation: str, schema: str, identifier: str) -> str:
    """Folder of the Qbeast catalog table ``schema.identifier`` (from SHOW TABLE EXTENDED)."""
    if not _SCHEMA_NAME.match(schema or ""):
        raise argument_error(operation, "relation_or_path", f"{schema}.{identifier}",
                    "a schema name of letters, digits and underscores")
    rows = engine.sql(f"show table extended in {schema} like {sql_string(identifier)}")
    facts: Dict[str, str] = {}
    for row in rows:
        if str(row["tableName"]).lower() == identifier.lower():
            facts = dict(line.split(": ", 1) for line in str(row["information"]).splitlines()
                         if ": " in line)
    if not facts:
        raise argument_error(operation, "relation_or_path", f"{schema}.{identifier}", "an existing table (none by that name)")
    if facts.get("Provider", "").lower() != "qbeast" or "Location" not in facts:
        raise argument_error(operation, "relation_or_path", f"{schema}.{identifier}",
                    f"a qbeast table (this one's provider is {facts.get('Provider', 'unknown')}); "
                    "pass a folder path to work on a Delta or parquet table")
    import qbeast

    return qbeast.local_path(facts["Location"])


def report(operation: str, result: Any) -> Dict[str, Any]:
    """Log the result as readable text (dbt shows it) and hand Jinja a plain dict."""
    logger.info(f"{operation}:\n{result}")
    return result.to_dict()
