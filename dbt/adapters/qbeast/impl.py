"""The qbeast adapter: dbt-spark's SQL behaviour on the in-process session, plus engine methods.

The ``@available`` methods are what the ``qbeast`` materialization macro calls; they are thin
wrappers over the engine's public API (``qbeast.write``, ``qbeast.create_table``,
``qbeast.QbeastTable``, ...: only names ``qbeast`` itself exports) so that the Jinja stays
declarative.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

from dbt.adapters.base import available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.qbeast.connections import QbeastConnectionManager
from dbt.adapters.qbeast import run_operations as ops
from dbt.adapters.qbeast.errors import QbeastModelConfigError, QbeastRunOperationError
from dbt.adapters.qbeast.model_config import QbeastModelConfig, model_config_from_node
from dbt.adapters.qbeast.relation import QbeastRelation
from dbt.adapters.qbeast.schema_changes import apply_schema_change

logger = AdapterLogger("Qbeast")


@dataclass
class QbeastConfig(SparkConfig):
    """Model configs the adapter understands on top of dbt-spark's (see docs/dbt.md)."""

    columns_to_index: Optional[Any] = None
    cube_size: Optional[int] = None
    write_mode: Optional[str] = None
    column_stats: Optional[Any] = None
    tblproperties: Optional[Dict[str, Any]] = None
    optimize_after_run: Optional[bool] = None


@contextmanager
def _engine_errors(model: str, what: str) -> Iterator[None]:
    """Engine errors as dbt errors that name the model: bad options as config errors."""
    from qbeast import InvalidOptionError, QbeastError

    try:
        yield
    except InvalidOptionError as exc:
        raise QbeastModelConfigError(f"model {model}: {exc}") from exc
    except QbeastError as exc:
        raise DbtRuntimeError(f"model {model}: {what} failed: {exc}") from exc


@contextmanager
def _operation_errors(operation: str) -> Iterator[None]:
    """Engine errors of a run-operation as dbt errors that name the operation."""
    from qbeast import QbeastError

    try:
        yield
    except QbeastError as exc:
        raise QbeastRunOperationError(f"run-operation {operation}: {exc}") from exc


class QbeastAdapter(SparkAdapter):
    """Spark adapter whose connection is the engine's Spark session."""

    ConnectionManager = QbeastConnectionManager
    Relation = QbeastRelation
    AdapterSpecificConfigs = QbeastConfig

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
    def qbeast_model_config(self, model: Dict[str, Any]) -> QbeastModelConfig:
        """Validate a qbeast model's config; raises a dbt error naming model, option, allowed values.

        Takes the whole model node so that aliases, typo'd keys and ``persist_docs`` (which needs
        the model's description and column docs) are all checked in one place.
        """
        return model_config_from_node(model)

    @available
    def qbeast_location(self, relation: QbeastRelation, model_config: QbeastModelConfig) -> str:
        """Where the model's Qbeast table lives.

        ``location_root/<name>`` when configured (relative roots hang off the dbt project folder),
        else ``<schema folder>/<name>`` in the warehouse, the folder a managed table would use.
        """
        import qbeast

        if model_config.location_root:
            root = qbeast.local_path(model_config.location_root)
            if "://" not in root and not os.path.isabs(root):
                project_root = self.connections.project_root  # type: ignore[attr-defined]
                root = os.path.join(str(project_root), root)
        else:
            root = qbeast.local_path(self._spark().catalog.getDatabase(relation.schema).locationUri)
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
        """Run the model's query, write it as a Qbeast table and (re)register the catalog table.

        Nothing before the engine's single commit changes the table, so any failure up to it
        (the query, a schema change refused by ``on_schema_change``, the write itself) leaves the
        previous version as the current one.
        """
        import qbeast
        from pyspark.errors import AnalysisException

        spark = self._spark()
        started = time.monotonic()
        try:
            df = spark.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(f"model {model_config.model}: {exc}") from exc
        model_config.check_columns_exist(df.columns)
        merge_schema = False
        if mode == "append":
            df, merge_schema = apply_schema_change(
                df, qbeast.QbeastTable.for_path(spark, location).to_df().columns, model_config
            )
        with _engine_errors(model_config.model, "qbeast write"):
            result = qbeast.write(
                df,
                location,
                list(model_config.columns_to_index),
                cube_size=model_config.cube_size,
                mode=mode,
                column_stats=model_config.column_stats,
                merge_schema=merge_schema,
            )
        message = (
            f"QBEAST {mode.upper()} {result.rows} rows, {result.file_count} files, "
            f"revision {result.revision_id}, version {result.version}"
        )
        if model_config.optimize_after_run:
            with _engine_errors(model_config.model, "optimize_after_run"):
                optimized = qbeast.QbeastTable.for_path(spark, location).optimize()
            logger.info(f"qbeast optimize {relation} after the write:\n{optimized}")
            message += ", optimized"
        self._register_qbeast_table(spark, relation, location, model_config)
        logger.info(f"{message} into {relation} in {time.monotonic() - started:.1f}s")
        return AdapterResponse(_message=message, code=f"QBEAST {mode.upper()}", rows_affected=result.rows)

    @available
    def qbeast_sample_predicate(self, relation: Any, fraction: Any) -> str:
        """The row filter of ``qbeast_sample(relation, fraction)``: ``hash(indexed columns) < w``.

        A filter rather than a table option, because Spark may share one relation between the
        references to a table in a query; the engine (and the JVM read bridge) prune files by it.
        """
        import qbeast

        op = "qbeast_sample"
        share = ops.check_number(op, "fraction", fraction, 0.0, 1.0, low_open=True)
        schema = getattr(relation, "schema", None)
        identifier = getattr(relation, "identifier", None)
        if not schema or not identifier:
            raise QbeastModelConfigError(
                f"qbeast_sample: invalid relation {relation!r}; allowed values: a relation of a "
                "qbeast model or source, e.g. ref('events')"
            )
        location = ops.catalog_location(self._spark(), op, str(schema), str(identifier))
        with _operation_errors(op):
            return qbeast.QbeastTable.for_path(self._spark(), location).sample_predicate(share)

    # -- methods for the run-operations (macros in run_operations.sql) --------------------------

    @available
    def qbeast_table_location(self, operation: str, schema: Any, identifier: Any = None) -> str:
        """Folder of a table named by ``schema.identifier`` (catalog lookup) or by a path."""
        if identifier is None:
            return ops.check_path(operation, "relation_or_path", schema)
        return ops.catalog_location(self._spark(), operation, str(schema), str(identifier))

    @available
    def qbeast_optimize(self, location: str, revision_id: Any = None, fraction: Any = 1.0,
                        files: Any = None) -> Dict[str, Any]:
        """``QbeastTable.optimize`` on the table at ``location``."""
        import qbeast

        op = "qbeast_optimize"
        revision = ops.check_int(op, "revision_id", revision_id, 0)
        share = ops.check_number(op, "fraction", fraction, 0.0, 1.0, low_open=True)
        chosen = ops.check_files(op, files)
        with _operation_errors(op):
            result = qbeast.QbeastTable.for_path(self._spark(), location).optimize(
                revision_id=revision, fraction=share, files=chosen
            )
        return ops.report(op, result)

    @available
    def qbeast_convert(self, path: Any, columns_to_index: Any, cube_size: Any = None,
                       source_format: Any = None) -> Dict[str, Any]:
        """``qbeast.convert_to_qbeast``: a Delta or parquet folder becomes a Qbeast table in place."""
        import qbeast

        op = "qbeast_convert"
        location = ops.check_path(op, "path", path)
        try:
            specs = qbeast.parse_columns_to_index(columns_to_index)
        except qbeast.InvalidOptionError:
            raise ops.argument_error(op, "columns_to_index", columns_to_index,
                                     "a non-empty list of column names") from None
        size = ops.check_int(op, "cube_size", cube_size, 1)
        if source_format is not None and source_format not in ("delta", "parquet"):
            raise ops.argument_error(op, "source_format", source_format, "delta, parquet, none (detect)")
        with _operation_errors(op):
            result = qbeast.convert_to_qbeast(
                self._spark(), location, [s.text for s in specs], cube_size=size,
                source_format=source_format,
            )
        return ops.report(op, result)

    @available
    def qbeast_upgrade_format(self, location: str, dry_run: Any = False) -> Dict[str, Any]:
        """``qbeast.upgrade_format``: rewrite older tag generations to the current one."""
        import qbeast

        op = "qbeast_upgrade_format"
        dry = ops.check_bool(op, "dry_run", dry_run)
        with _operation_errors(op):
            result = qbeast.upgrade_format(location, dry_run=dry)
        return ops.report(op, result)

    @available
    def qbeast_vacuum(self, location: str, retention_hours: Any = 168, dry_run: Any = False,
                      allow_short_retention: Any = False) -> Dict[str, Any]:
        """``QbeastTable.vacuum``: delete files no version inside the retention window uses."""
        import qbeast

        op = "qbeast_vacuum"
        hours = ops.check_number(op, "retention_hours", retention_hours, 0.0, None, low_open=False)
        dry = ops.check_bool(op, "dry_run", dry_run)
        short = ops.check_bool(op, "allow_short_retention", allow_short_retention)
        with _operation_errors(op):
            result = qbeast.QbeastTable.for_path(self._spark(), location).vacuum(
                retention_hours=hours, dry_run=dry, allow_short_retention=short
            )
        return ops.report(op, result)

    @available
    def qbeast_index_metrics(self, location: str, revision_id: Any = None) -> Dict[str, Any]:
        """``QbeastTable.index_metrics``: cubes, blocks, files and element counts of a revision."""
        import qbeast

        op = "qbeast_index_metrics"
        revision = ops.check_int(op, "revision_id", revision_id, 0)
        with _operation_errors(op):
            result = qbeast.QbeastTable.for_path(self._spark(), location).index_metrics(revision_id=revision)
        return ops.report(op, result)

    @staticmethod
    def _register_qbeast_table(
        spark: Any, relation: QbeastRelation, location: str, model_config: QbeastModelConfig
    ) -> None:
        """Point catalog table ``relation`` (``USING qbeast``, external) at ``location``.

        Re-created on every write so that its schema follows the table's; dropping an external
        table never deletes its files. ``persist_docs`` comments and ``tblproperties`` go to the
        engine's ``qbeast.create_table``, which keeps column comments in the schema (so no ALTER
        COLUMN statement ever rewrites the column metadata that carries the location).
        """
        import qbeast

        qbeast.create_table(
            spark,
            relation.render(),
            location,
            replace=True,
            column_comments=model_config.column_comments,
            properties=model_config.tblproperties,
            comment=model_config.table_comment,
        )
