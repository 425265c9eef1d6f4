"""The qbeast adapter: dbt-spark's SQL behaviour on the in-process session, plus engine methods.

The ``@available`` methods are what the ``qbeast`` materialization macro calls; they are thin
wrappers over the engine's public API (``qbeast.write``, ``qbeast.register``, the data source's
catalog-table helpers) so that the Jinja stays declarative.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional
from urllib.parse import unquote, urlparse

from dbt.adapters.base import available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.qbeast.connections import QbeastConnectionManager
from dbt.adapters.qbeast.errors import QbeastModelConfigError
from dbt.adapters.qbeast.model_config import QbeastModelConfig, parse_model_config
from dbt.adapters.qbeast.relation import QbeastRelation

logger = AdapterLogger("Qbeast")


@dataclass
class QbeastConfig(SparkConfig):
    """Model configs the adapter understands on top of dbt-spark's (see docs/dbt.md)."""

    columns_to_index: Optional[Any] = None
    cube_size: Optional[int] = None
    write_mode: Optional[str] = None


def _local_path(uri: str) -> str:
    """``file:`` URIs (what Spark's catalog reports) as plain paths; other URIs unchanged."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return uri


class QbeastAdapter(SparkAdapter):
    """Spark adapter whose connection is the engine's Spark session."""

    ConnectionManager = QbeastConnectionManager  # type: ignore[assignment]
    Relation = QbeastRelation  # type: ignore[assignment]
    AdapterSpecificConfigs = QbeastConfig  # type: ignore[assignment]

    @classmethod
    def _get_adapter_specific_run_info(cls, config: Any) -> Dict[str, Any]:
        info = super()._get_adapter_specific_run_info(config)
        info["adapter_type"] = "qbeast"
        return info

    def _spark(self) -> Any:
        """The Spark session behind this thread's connection (opened if needed)."""
        handle = self.connections.get_thread_connection().handle
        return handle.handle.session

    # -- methods for the qbeast materialization --------------------------------------------

    @available
    def qbeast_model_config(
        self,
        model_name: str,
        columns_to_index: Any,
        cube_size: Any = None,
        write_mode: Any = None,
        location_root: Any = None,
    ) -> QbeastModelConfig:
        """Validate a qbeast model's config; raises a dbt error naming model, option, allowed values."""
        return parse_model_config(model_name, columns_to_index, cube_size, write_mode, location_root)

    @available
    def qbeast_location(self, relation: QbeastRelation, model_config: QbeastModelConfig) -> str:
        """Where the model's Qbeast table lives.

        ``location_root/<name>`` when configured (relative roots hang off the dbt project folder),
        else ``<schema folder>/<name>`` in the warehouse, the folder a managed table would use.
        """
        if model_config.location_root:
            root = _local_path(model_config.location_root)
            if "://" not in root and not os.path.isabs(root):
                root = os.path.join(str(self.connections.project_root), root)
        else:
            root = _local_path(self._spark().catalog.getDatabase(relation.schema).locationUri)
        return root.rstrip("/") + "/" + relation.identifier

    @available
    def qbeast_write(
        self,
        relation: QbeastRelation,
        sql: str,
        model_config: QbeastModelConfig,
        location: str,
        mode: str,
    ) -> AdapterResponse:
        """Run the model's query, write it as a Qbeast table and (re)register the catalog table."""
        import qbeast
        from qbeast.errors import InvalidOptionError, QbeastError

        spark = self._spark()
        started = time.monotonic()
        from pyspark.errors import AnalysisException

        try:
            df = spark.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(f"model {model_config.model}: {exc}") from exc
        model_config.check_columns_exist(df.columns)
        try:
            result = qbeast.write(
                df,
                location,
                list(model_config.columns_to_index),
                cube_size=model_config.cube_size,
                mode=mode,
            )
        except InvalidOptionError as exc:
            raise QbeastModelConfigError(f"model {model_config.model}: {exc}") from exc
        except QbeastError as exc:
            raise DbtRuntimeError(f"model {model_config.model}: qbeast write failed: {exc}") from exc
        self._register_qbeast_table(spark, relation, location)
        logger.info(
            f"qbeast {mode} {relation}: {result.rows} rows, {result.file_count} files, "
            f"version {result.version}, revision {result.revision_id} in "
            f"{time.monotonic() - started:.1f}s"
        )
        return AdapterResponse(
            _message=f"QBEAST {mode.upper()} {result.rows} rows, {result.file_count} files, "
            f"version {result.version}",
            code=f"QBEAST {mode.upper()}",
            rows_affected=result.rows,
        )

    @staticmethod
    def _register_qbeast_table(spark: Any, relation: QbeastRelation, location: str) -> None:
        """Point catalog table ``relation`` (``USING qbeast``, external) at ``location``.

        Re-created on every write so that its schema follows the table's; dropping an external
        table never deletes its files.
        """
        import qbeast
        from qbeast.spark.datasource import SOURCE_NAME, table_schema_with_location

        qbeast.register(spark)
        schema = qbeast.QbeastTable.for_path(spark, location).to_df().schema
        name = relation.render()
        spark.sql(f"drop table if exists {name}")
        spark.catalog.createTable(
            name,
            path=location,
            source=SOURCE_NAME,
            schema=table_schema_with_location(schema, location),
        )
