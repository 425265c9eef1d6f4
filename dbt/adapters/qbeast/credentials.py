"""Profile fields of a ``type: qbeast`` target.

The adapter runs the qbeast engine inside the dbt process, so the only connection method that makes
sense is ``session`` (a local Spark session, or a cluster / Spark Connect session configured through
``server_side_parameters``). It is therefore the default, and a profile with just ``type: qbeast``
and ``schema:`` is complete. dbt-spark's remote methods (thrift, http, odbc) would run SQL on a
server that cannot call the Python engine, so they are rejected with an error that says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from dbt.adapters.spark.connections import SparkCredentials

from qbeast import EmbeddedCatalog

from dbt.adapters.qbeast.errors import QbeastProfileError

SESSION_METHOD = "session"
ALLOWED_METHODS: Tuple[str, ...] = (SESSION_METHOD,)
DEFAULT_CATALOG_DIR = EmbeddedCatalog.DEFAULT_FOLDER


@dataclass
class QbeastCredentials(SparkCredentials):
    """dbt-spark's credentials with in-process defaults.

    ``catalog_dir`` holds the embedded Hive metastore (Derby) and the Spark warehouse. A relative
    path is taken relative to the dbt project folder, never the working directory, so ``dbt run``
    started from anywhere sees the same tables.
    """

    method: str = SESSION_METHOD  # type: ignore[assignment]
    host: Optional[str] = "localhost"
    catalog_dir: str = DEFAULT_CATALOG_DIR

    def __post_init__(self) -> None:
        method = str(self.method) if self.method is not None else ""
        if method not in ALLOWED_METHODS:
            raise QbeastProfileError(
                f"unsupported `method: {self.method}` in the qbeast profile; allowed values: "
                f"{', '.join(ALLOWED_METHODS)} (the qbeast engine runs inside the dbt process; "
                "point `server_side_parameters` at a cluster, e.g. spark.master or spark.remote, "
                "to use remote compute)"
            )
        self.method = method
        if not str(self.catalog_dir or "").strip():
            raise QbeastProfileError(
                "`catalog_dir` in the qbeast profile is empty; allowed values: a folder path "
                f"(relative to the dbt project folder), default {DEFAULT_CATALOG_DIR!r}"
            )
        super().__post_init__()

    @property
    def type(self) -> str:
        return "qbeast"

    @property
    def unique_field(self) -> str:
        return f"{self.method}:{self.schema}"

    def _connection_keys(self) -> Tuple[str, ...]:
        return ("method", "schema", "catalog_dir", "server_side_parameters")

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        # A profile may say `method: session` explicitly or leave it out; both mean session.
        if data.get("method") is None:
            data["method"] = SESSION_METHOD
        return data
