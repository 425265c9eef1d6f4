"""The qbeast adapter: dbt-spark's SQL behaviour on the in-process session, plus engine methods.

The ``@available`` methods are what the ``qbeast`` materialization macro calls; they are thin
wrappers over the engine's public API (``qbeast.write``, ``qbeast.create_table``,
``qbeast.QbeastTable``, ...: only names ``qbeast`` itself exports) so that the Jinja stays
declarative.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, cast

from dbt.adapters.base import available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from dbt.adapters.qbeast import engines, interrupts, microbatch, python_models, seeds, swaps
from dbt.adapters.qbeast import run_operations as ops
from dbt.adapters.qbeast.connections import QbeastConnectionManager
from dbt.adapters.qbeast.engine_errors import model_errors, operation_errors, statement_error
from dbt.adapters.qbeast.errors import QbeastModelConfigError, operation_words
from dbt.adapters.qbeast.locations import check_ownership, folder_content, same_location, write_marker
from dbt.adapters.qbeast.config_keys import check_python_keys, has_qbeast_file_format, qbeast_spelling
from dbt.adapters.qbeast.model_config import (
    QbeastModelConfig,
    model_config_from_node,
    seed_config_from_node,
    snapshot_config_from_node,
)
from dbt.adapters.qbeast.project_sample import (
    SAMPLED_PROPERTY,
    VAR,
    ProjectSample,
    SampleDecisions,
    column_types,
    sampled_marker,
)
from dbt.adapters.qbeast.relation import QbeastRelation, catalog_entry_current
from dbt.adapters.qbeast.schema_changes import apply_schema_change
from dbt.adapters.qbeast.sql_literals import sql_string

logger = AdapterLogger("Qbeast")
#: Guards the per-relation decisions of a sampled run: dbt compiles nodes in several threads.
_SAMPLE_LOCK = threading.Lock()

#: dbt's word for an engine write mode, where they differ (result lines, response codes).
_STRATEGY_WORDS = {"delete_insert": "delete+insert", "replace_where": "microbatch"}


@dataclass
class QbeastConfig(SparkConfig):
    """Model configs the adapter understands on top of dbt-spark's (see docs/dbt.md)."""

    columns_to_index: Optional[Any] = None
    cube_size: Optional[int] = None
    write_mode: Optional[str] = None  # deprecated: incremental_strategy
    take_over_location: Optional[bool] = None
    column_stats: Optional[Any] = None
    non_finite: Optional[str] = None
    tblproperties: Optional[Dict[str, Any]] = None
    optimize_after_run: Optional[bool] = None


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

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> List[Any]:
        """dbt-spark's relations of a schema, without the session's temporary views.

        ``SHOW TABLE EXTENDED IN <schema>`` also lists every temporary view of the session with
        an empty schema (dbt-spark's incremental runs leave ``<model>__dbt_tmp`` views behind in
        a session that outlives a model: the embedded session of programmatic dbt runs, a
        ``qbeast serve`` connection). They belong to no schema: counted in, ``dbt docs generate``
        failed on their missing schema, and dbt's relation cache got relations without one."""
        in_schema = [row for row in row_list if row[0]]
        return list(super()._build_spark_relation_list(in_schema, relation_info_func))

    def _get_columns_for_catalog(self, relation: Any) -> Iterator[Dict[str, Any]]:
        """dbt-spark's catalog rows plus the comments the catalog holds (``persist_docs``) and,
        for a qbeast table, its statistics from the Delta log.

        dbt-spark leaves ``table_comment`` and ``column_comment`` empty, so comments persisted by
        a model never reached ``catalog.json``; the comments cost two catalog lookups per
        relation (the table comment in ``show table extended``'s text ends at its first line
        break, so it is read from the catalog too). Spark's
        catalog has no statistics for a qbeast table (dbt showed ``has_stats: false``); the
        engine reads them from the log, once per relation.
        """
        table_comment: Optional[str] = None
        column_comments: Optional[Dict[str, str]] = None
        stats: Optional[Dict[str, Any]] = None
        for row in super()._get_columns_for_catalog(relation):
            if column_comments is None:
                column_comments = self._column_comments(relation)
                table_comment = self._table_comment(relation)
                stats = self._qbeast_stats(relation)
            row["table_comment"] = table_comment
            row["column_comment"] = column_comments.get(str(row.get("column_name")).lower())
            row.update(stats or {})
            if not stats:
                _drop_unknown_row_count(row)
            row.update(_sampled_stats(relation))
            yield row

    def _qbeast_stats(self, relation: Any) -> Dict[str, Any]:
        """``stats:<id>:label/value/description/include`` of a qbeast table, as dbt-spark names
        the statistics it reads from Spark's catalog (an empty dict for other relations)."""
        import qbeast

        location = relation.location if getattr(relation, "is_qbeast", False) else None
        if not location:
            return {}
        try:
            facts = self._engine().statistics(location)
        except (qbeast.QbeastError, DbtRuntimeError) as exc:  # a broken table must not fail the catalog
            logger.debug(f"no statistics for {relation}: {exc}")
            return {}
        optimized = facts["last_optimize"]
        values = {
            "rows": ("Rows", facts["rows"], "rows in the latest version (Delta log statistics)"),
            "bytes": ("Bytes", facts["bytes"], "bytes of the latest version's data files"),
            "files": ("Files", facts["files"], "data files of the latest version"),
            "revisions": ("Revisions", facts["revisions"], "live Qbeast revisions (with files)"),
            "indexed_columns": ("Indexed columns", ", ".join(facts["indexed_columns"]),
                                "columns_to_index of the latest revision"),
            "cube_size": ("Cube size", facts["cube_size"], "cube_size of the latest revision"),
            # "2026-01-31 10:00:00.000 UTC": ISO text would become a datetime in dbt's catalog
            # table, which is not a valid statistic value
            "last_optimize": ("Last optimize",
                              optimized.replace("T", " ").replace("Z", " UTC")
                              if optimized else "never",
                              "time (UTC) of the newest OPTIMIZE commit"),
        }
        stats: Dict[str, Any] = {}
        for key, (label, value, description) in values.items():
            stats[f"stats:{key}:label"] = label
            stats[f"stats:{key}:value"] = value
            stats[f"stats:{key}:description"] = description
            stats[f"stats:{key}:include"] = value is not None
        return stats

    def _table_comment(self, relation: Any) -> Optional[str]:
        try:
            return self._engine().table_comment(f"{relation.schema}.{relation.identifier}")
        except Exception:  # noqa: BLE001 - comments are a nicety; the catalog still lists the table
            return relation.facts.get("Comment") if isinstance(relation, QbeastRelation) else None

    def _column_comments(self, relation: Any) -> Dict[str, str]:
        try:
            return self._engine().column_comments(f"{relation.schema}.{relation.identifier}")
        except Exception:  # noqa: BLE001 - comments are a nicety; the catalog still lists the table
            return {}

    @property
    def _qbeast_connections(self) -> QbeastConnectionManager:
        """``self.connections``, typed as what this adapter always builds (ConnectionManager)."""
        return cast(QbeastConnectionManager, self.connections)

    def _spark(self) -> Any:
        """The Spark session behind this thread's connection (opened if needed)."""
        engine = self._engine()
        if not isinstance(engine, engines.SessionEngine):
            raise engines.not_over_sql("a Python model", "write it as a SQL model, or build it with "
                                       "method: connect (the same server) or session")
        return engine.spark

    def _engine(self) -> engines.Engine:
        """Where this thread's engine calls run (:mod:`engines`): the dbt process's Spark session,
        or the server behind the SQL connection (``method: thrift``)."""
        return engines.engine_of(self)

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> AdapterResponse:
        """Python models run in the dbt process, on the adapter's Spark session.

        dbt-spark would send the script to a Databricks cluster (and ask for a ``cluster_id``);
        here the engine and the session live in this process, so the script runs here.
        """
        name = str(parsed_model.get("name"))
        interrupts.check(f"model {name}")
        check_python_keys(name, parsed_model.get("config") or {}, "python")
        with model_errors(name, "the Python model"):
            python_models.run_script(self._spark(), compiled_code, name)
        return AdapterResponse(_message="OK")

    # -- methods for the qbeast materialization --------------------------------------------

    @available
    def qbeast_model_config(self, model: Dict[str, Any]) -> QbeastModelConfig:
        """Validate a qbeast model's config; raises a dbt error naming model, option, allowed values.

        Takes the whole model node so that aliases, typo'd keys and ``persist_docs`` (which needs
        the model's description and column docs) are all checked in one place.
        """
        return model_config_from_node(model)

    @available
    def qbeast_is_qbeast_model(self, model: Dict[str, Any]) -> bool:
        """True for a model written by the qbeast engine: ``materialized='qbeast'``, or dbt-spark's
        spelling ``materialized='table'`` / ``'incremental'`` with ``file_format='qbeast'``."""
        return qbeast_spelling(model.get("config") or {}) is not None

    @available
    def qbeast_check_plain_location(self, model: Dict[str, Any]) -> str:
        """Refuse up front a ``table`` or ``incremental`` model in a Spark file format (parquet,
        delta...) whose ``location_root`` is on an object store this session's Hadoop cannot
        write (no connector for the scheme): Spark would fail after the query ran, with
        Hadoop's "No FileSystem for scheme". A Qbeast model writes buckets through the engine.
        Only the embedded session can tell; through a server the server's answer stands."""
        import qbeast

        config = model.get("config") or {}
        root = config.get("location_root")
        if not isinstance(root, str) or "://" not in root:
            return ""
        engine = engines.engine_of(self)
        if not isinstance(engine, engines.SessionEngine):  # the server's class path decides
            return ""
        location = f"{root.rstrip('/')}/{model.get('alias') or model.get('name')}"
        if qbeast.spark_writes_location(engine.spark, location):
            return ""
        materialized = config.get("materialized")
        raise QbeastModelConfigError(
            f"model {model.get('name')}: materialized='{materialized}' with file_format="
            f"'{config.get('file_format') or 'parquet'}' at {location} is written by Spark through "
            f"Hadoop, which has no file system for {location.split('://')[0]}:// in this session; "
            f"use materialized='qbeast' (or file_format='qbeast'), which writes bucket locations "
            f"through the engine, or give the session a Hadoop connector (docs/cluster.md)")

    @available
    def qbeast_has_qbeast_file_format(self, model: Dict[str, Any]) -> bool:
        """True for a snapshot or seed with ``file_format='qbeast'`` (written by the engine)."""
        return has_qbeast_file_format(model.get("config") or {})

    @available
    def qbeast_snapshot_config(self, model: Dict[str, Any]) -> QbeastModelConfig:
        """Validate a qbeast snapshot's index config (errors name the snapshot and the option)."""
        return snapshot_config_from_node(model)

    @available
    def qbeast_snapshot(self, model: Dict[str, Any], relation: QbeastRelation,
                        staging: Optional[QbeastRelation], build_sql: Optional[str],
                        snapshot_config: QbeastModelConfig, columns: Dict[str, str]) -> AdapterResponse:
        """Write a snapshot: its first table (``build_sql``), or merge dbt's staging rows into it.

        The merge has the shape of dbt-spark's snapshot merge, in one engine commit: staging rows
        match target rows on ``dbt_scd_id``, only current target rows (``dbt_valid_to`` null or
        ``dbt_valid_to_current``) can match, a match sets ``dbt_valid_to`` (the update and delete
        rows of dbt's staging query carry the scd id of the current row they close), and rows
        without a match are inserted (dbt's insert rows carry a new scd id).
        """
        if staging is None:
            return self.qbeast_write(model, relation, None, str(build_sql), snapshot_config, False)
        snapshot_config = self._with_sample_marker(model, snapshot_config)
        engine = self._engine()
        location = relation.location or self.qbeast_location(relation, snapshot_config)
        staged = engine.table_rows(staging.render())
        internal = ("dbt_change_type", "dbt_unique_key")
        kept = [c for c in staged.columns if not c.lower().startswith(internal)]
        table_columns = {c.lower() for c in self._table_schema(location).fieldNames()}
        merge_schema = any(c.lower() not in table_columns for c in kept)
        valid_to = columns["dbt_valid_to"]
        current = f"{valid_to} is null"
        valid_to_current = (model.get("config") or {}).get("dbt_valid_to_current")
        if valid_to_current:
            current = f"{valid_to} = {valid_to_current} or {current}"
        merge_config = dataclasses.replace(
            snapshot_config, incremental_strategy="merge", unique_key=(columns["dbt_scd_id"],),
            incremental_predicates=(current,), merge_update_columns=(valid_to,))
        message, rows = self._change_rows(engine, staged.projected([(c, c) for c in kept]), location,
                                          "merge", merge_schema, merge_config, relation)
        if self._maintain(engine, location, relation, snapshot_config):
            message += ", optimized"
        self._refresh_catalog_entry(engine, relation, relation, location, snapshot_config)
        message = message.replace("QBEAST MERGE", "QBEAST SNAPSHOT", 1)
        logger.info(f"{message} into {relation}")
        return AdapterResponse(_message=message, code="QBEAST SNAPSHOT", rows_affected=rows)

    @available
    def qbeast_clone(self, source: QbeastRelation, target: QbeastRelation,
                     existing: Optional[QbeastRelation]) -> AdapterResponse:
        """``dbt clone`` of the Qbeast table ``source``: catalog table ``target`` over its folder.

        No file is copied or written: the clone reads the original's table (its latest version
        at every query). What held the target's name before (``--full-refresh``) is dropped
        first unless it is a Qbeast table, whose catalog entry is replaced (its files stay).
        """
        engine = self._engine()
        location = source.location
        if not location:
            raise DbtRuntimeError(f"clone of {source}: the catalog records no location for it")
        if existing is not None and not existing.is_qbeast:
            self._swaps(engine).drop(existing)
        engine.sql(f"create schema if not exists {target.schema}")
        config = QbeastModelConfig(model=str(target.identifier), columns_to_index=(),
                                   cube_size=None, location_root=None)
        self._register_qbeast_table(engine, target, location, config)
        self._names(record=(target, location))
        version = engine.table_schema(location).version
        message = f"QBEAST CLONE of {source} at {location} (version {version})"
        logger.info(message)
        return AdapterResponse(_message=message, code="QBEAST CLONE")

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
                root = os.path.join(str(self._qbeast_connections.project_root), root)
        else:
            root = self._schema_folder(relation.schema)
        return root.rstrip("/") + "/" + str(relation.identifier)

    def _schema_folder(self, schema: Optional[str]) -> str:
        return self._engine().schema_folder(schema)

    @available
    def qbeast_is_incremental(self, model: Dict[str, Any], relation: Optional[QbeastRelation]) -> bool:
        """``is_incremental()`` of a qbeast model: an incremental strategy, and its table exists.

        The table must be this model's Qbeast table at the location the config names now: after a
        change of ``location_root`` (or from a view or plain table) the run builds the table anew.
        """
        config = model_config_from_node(model)
        if not config.is_incremental or relation is None or not relation.is_qbeast:
            return False
        return same_location(relation.location, self.qbeast_location(relation, config))

    @available
    def qbeast_write(
        self,
        model: Dict[str, Any],
        relation: QbeastRelation,
        old_relation: Optional[QbeastRelation],
        code: str,
        model_config: QbeastModelConfig,
        incremental: bool,
        empty: bool = False,
        frame: Any = None,
    ) -> AdapterResponse:
        """Build the model's Qbeast table: check the location, run the model, write, register.

        Nothing before the engine's single commit changes the table, so any failure up to it (the
        location check, the query, a schema change refused by ``on_schema_change``, the write)
        leaves the previous version as the current one. A view or plain table holding the name is
        replaced only once the Qbeast table is written (see ``swaps``).

        ``empty`` (dbt's ``--empty``: every ref and source reads no row): an incremental run
        checks the query and its columns against the table as usual and then changes nothing.
        The flag is there to check SQL and schemas; a strategy that replaces what the new rows
        cover (a microbatch window, say) would otherwise delete rows for rows that were never read.
        """
        engine = self._engine()
        started = time.monotonic()
        model_config = self._with_sample_marker(model, model_config)
        name = model_config.model
        interrupts.check(f"model {name}")
        location = self.qbeast_location(relation, model_config)
        replaces = old_relation is not None and not old_relation.is_qbeast
        catalog_location = old_relation.location if old_relation is not None else None
        if not same_location(catalog_location, location):  # else the catalog vouches for it
            content = folder_content(engine.describe_folder(location))
            check_ownership(name, relation.render(), location, content, catalog_location,
                            model_config.take_over_location)
        # A plain table whose files sit where the Qbeast table goes: write beside it, move later.
        in_place_of_files = replaces and same_location(catalog_location, location)
        folder = (self._swaps(engine).temporary_folder(relation, location) if in_place_of_files
                  else location)
        mode = model_config.write_mode(incremental)

        with model_errors(name, "the model's query"):
            rows = (engine.model_rows(code, frame) if frame is not None
                    else self._model_rows(engine, model, code, name))
        model_config.check_columns_exist(rows.columns, keyed_run=mode in ("merge", "delete_insert"))
        window = microbatch.batch_window(model) if model_config.event_time is not None else None
        merge_schema = False
        if mode != "overwrite":
            rows, merge_schema = apply_schema_change(
                rows, self._table_schema(location).fieldNames(), model_config)
        if mode == "replace_where" and window is None:
            raise QbeastModelConfigError(
                f"model {name}: incremental_strategy='microbatch' replaces one batch's window per "
                "run, but dbt ran this model without a batch (dbt runs batches for "
                "materialized='incremental' models)")
        if empty and mode != "overwrite":
            word = _STRATEGY_WORDS.get(mode, mode).upper()
            message = f"QBEAST {word} checked under --empty, nothing committed"
            logger.info(f"{message} into {relation}: the table keeps its rows")
            return AdapterResponse(_message=message, code=f"QBEAST {word}", rows_affected=0)
        if mode in ("merge", "delete_insert", "replace_where"):
            message, changed = self._change_rows(engine, rows, folder, mode, merge_schema,
                                                 model_config, relation, window)
        else:
            if mode == "append":
                self._check_indexed_columns(self._engine_schema(folder), model_config)
            with model_errors(name, f"qbeast write to {folder}"):
                result = engine.write(rows, folder, self._write_request(mode, merge_schema, model_config,
                                                                        relation),
                                      cancelled=self._qbeast_connections.cancel_requested)
            changed = result.rows
            message = (
                f"QBEAST {mode.upper()} no rows, nothing committed" if result.version is None else
                f"QBEAST {mode.upper()} {result.rows} rows, {result.files_added} files, "
                f"revision {result.revision_id}, version {result.version}"
            )
        if self._maintain(engine, folder, relation, model_config):
            message += ", optimized"
        if replaces:
            assert old_relation is not None
            self._swaps(engine).replace_with_qbeast(
                old_relation, relation, folder, location,
                lambda: self._register_qbeast_table(engine, relation, location, model_config))
            self._names(record=(relation, location))
        else:
            self._refresh_catalog_entry(engine, old_relation, relation, location, model_config)
        if model.get("batch"):
            # dbt caches the relation a batch returns (no catalog description: "not qbeast");
            # the next batch must see this Qbeast table to run incrementally
            self.cache_dropped(relation)
            self.cache_added(self._swaps(engine).described(relation))
        logger.info(f"{message} into {relation} in {time.monotonic() - started:.1f}s")
        code = f"QBEAST {_STRATEGY_WORDS.get(mode, mode).upper()}"
        return AdapterResponse(_message=message, code=code, rows_affected=changed)

    def _maintain(self, engine: Any, folder: str, relation: QbeastRelation,
                  model_config: QbeastModelConfig) -> bool:
        """The default maintenance after a successful write (``optimize_after_run``): the tiered
        optimize, in commits of its own. True when it rewrote something (nothing to say when
        the write left nothing to lay out or the budget is not reached yet)."""
        import qbeast

        if not model_config.optimize_after_run:
            return False
        with model_errors(model_config.model, "optimize_after_run"):
            optimized, summary = engine.operation(
                "optimize", folder, max_rewrite_ratio=qbeast.MAINTENANCE_REWRITE_RATIO)
        logger.debug(f"qbeast optimize {relation} after the write:\n{summary}")
        return bool(optimized.get("commits"))

    def _write_request(self, mode: str, merge_schema: bool, model_config: QbeastModelConfig,
                       relation: QbeastRelation, window: Optional[Tuple[Any, Any]] = None) -> Any:
        """The engine write a model run asks for (:class:`qbeast.WriteRequest`), marked as this
        model's (the folder's owner, :func:`write_marker`)."""
        import qbeast

        keyed = mode in ("merge", "delete_insert")
        condition = None
        if mode == "replace_where":
            assert window is not None and model_config.event_time is not None
            condition = microbatch.window_condition(model_config.event_time, window)
        return qbeast.WriteRequest(
            mode=mode, columns_to_index=tuple(model_config.columns_to_index),
            cube_size=model_config.cube_size, column_stats=model_config.column_stats,
            merge_schema=merge_schema, non_finite=model_config.non_finite,
            skipping_indexes=model_config.skipping_indexes,
            on=tuple(model_config.unique_key) if keyed else (),
            update_columns=(tuple(model_config.merge_update_columns)
                            if mode == "merge" and model_config.merge_update_columns is not None else None),
            exclude_columns=(tuple(model_config.merge_exclude_columns or ()) or None) if mode == "merge" else None,
            target_predicate=model_config.target_predicate if keyed else None,
            condition=condition, user_metadata=write_marker(relation.render()))

    def _change_rows(self, engine: Any, rows: Any, folder: str, mode: str, merge_schema: bool,
                     model_config: QbeastModelConfig, relation: QbeastRelation,
                     window: Optional[Tuple[Any, Any]] = None) -> Tuple[str, int]:
        """The ``merge``, ``delete+insert`` and ``microbatch`` strategies: one engine commit that
        changes the rows of the model's keys (``QbeastTable.merge`` /
        ``QbeastTable.delete_insert``) or of the batch's time ``window``
        (``QbeastTable.replace_where``).

        New columns (``on_schema_change='append_new_columns'``) are added first by an append of no
        rows, a commit of its own, as dbt adds columns before its merge statement; the row
        changes then commit once or not at all. Returns the result line and the rows changed.
        """
        name = model_config.model
        strategy = _STRATEGY_WORDS.get(mode, mode)
        self._check_indexed_columns(self._engine_schema(folder), model_config)
        with model_errors(name, f"qbeast {strategy} of {folder}"):
            result = engine.write(rows, folder, self._write_request(mode, merge_schema, model_config,
                                                                    relation, window),
                                  cancelled=self._qbeast_connections.cancel_requested)
        if result.version is None:
            return f"QBEAST {strategy.upper()} no row changed, nothing committed", 0
        return (f"QBEAST {strategy.upper()} {result.rows_updated} updated, {result.rows_inserted} "
                f"inserted, {result.rows_deleted} deleted, {result.files_removed} files rewritten, "
                f"{result.files_added} added, version {result.version}", result.rows)

    @staticmethod
    def _check_indexed_columns(schema: Any, model_config: QbeastModelConfig) -> None:
        """An incremental run keeps the table's indexed columns: other ones need a rebuild.

        Checked here rather than left to the engine so that the remedy is dbt's (a full refresh)."""
        indexed = [c.lower() for c in schema.indexed_columns]
        if indexed != [c.lower() for c in model_config.column_names]:
            raise QbeastModelConfigError(
                f"model {model_config.model}: columns_to_index={list(model_config.columns_to_index)} "
                f"differs from the indexed columns of the table ({', '.join(indexed)}); changing the "
                "indexed columns needs a rebuild: dbt run --full-refresh"
            )

    def _refresh_catalog_entry(self, engine: Any, existing: Optional[QbeastRelation],
                               relation: QbeastRelation, location: str,
                               model_config: QbeastModelConfig) -> None:
        """Re-create ``relation``'s catalog entry unless ``existing`` still describes the table at
        ``location`` (schema, comments, properties), and record the name for ``qbeast describe``.

        An entry whose stored schema still holds ``qbeast.*`` column metadata (registered by an
        older version) is re-created too (``qbeast.ensure_catalog_table``): reads ignore it, but
        nothing should copy it on."""
        current = catalog_entry_current(existing, location, model_config, self._table_schema(location))
        self._register_qbeast_table(engine, relation, location, model_config, refresh=not current)
        self._names(record=(relation, location))

    def _engine_schema(self, location: str) -> Any:
        """The committed schema and index of the table at ``location`` (from its log)."""
        return self._engine().table_schema(location)

    def _table_schema(self, location: str) -> Any:
        """The committed schema of the Qbeast table at ``location``, as a Spark ``StructType``."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(self._engine_schema(location).schema)

    def _model_rows(self, engine: Any, model: Dict[str, Any], code: str, name: str) -> Any:
        """The model's rows: its SQL, or what its Python ``model()`` returns."""
        from pyspark.errors import AnalysisException

        if model.get("language") == "python":
            return engine.model_rows(code, python_models.model_dataframe(self._spark(), code, name))
        try:
            return engine.model_rows(code)
        except AnalysisException as exc:
            raise DbtRuntimeError(f"model {name}: {exc}") from exc

    def _swaps(self, engine: Any) -> swaps.CatalogSwap:
        """The catalog swap steps on ``engine``, reporting renames and drops to dbt's cache."""
        return swaps.CatalogSwap(engine, self)

    @available
    def qbeast_swap_in(self, old_relation: QbeastRelation, intermediate: QbeastRelation,
                       target: QbeastRelation) -> None:
        """Replace the Qbeast table ``old_relation`` by the built ``intermediate`` (table or view).

        The Qbeast table's files move away only when the new managed table must take their folder
        (a qbeast model at the default location turned into a ``table``); they are deleted once the
        new table holds the name. Otherwise they stay where they are (a later switch back to
        ``qbeast`` finds them as this model's own table).
        """
        lands_at = os.path.join(self._schema_folder(target.schema), str(target.identifier).lower())
        self._swaps(self._engine()).swap_in(old_relation, intermediate, target, lands_at)
        self._names(forget=target)

    def _names(self, record: Optional[Tuple[QbeastRelation, str]] = None,
               forget: Optional[QbeastRelation] = None) -> None:
        """Keep the catalog's Qbeast table names readable without Spark (``qbeast describe``).

        Only for a catalog of the dbt process (``session``, ``connect``): behind ``method:
        thrift`` the catalog is the server's, whose SQL lists its tables."""
        if str(self._qbeast_connections.credentials.method) == engines.THRIFT:
            return
        swaps.update_names_file(self._qbeast_connections.credentials.catalog_dir, record, forget)

    @available.parse_none
    def drop_relation(self, relation: Any) -> None:
        super().drop_relation(relation)
        if getattr(relation, "is_qbeast", False):
            self._names(forget=relation)

    def project_sample_filter(self, relation: Any, unique_id: Optional[str]) -> Optional[str]:
        """The row filter a ``ref()``/``source()`` of ``relation`` reads through in a run with
        ``--vars '{qbeast_sample: ...}'`` (None: read whole), decided and logged once per
        relation (:mod:`project_sample`)."""
        from dbt import selected_resources

        sample = self._project_sample()
        schema, identifier = getattr(relation, "schema", None), getattr(relation, "identifier", None)
        if sample is None or not schema or not identifier:
            return None
        name = f"{schema}.{identifier}"
        with _SAMPLE_LOCK:
            runs = self.__dict__.setdefault("_sample_decisions", {})
            decisions = runs.setdefault(sample, SampleDecisions.empty())
            if name in decisions.decided:
                return decisions.decided[name]
            predicate, why = self._project_sample_decision(sample, decisions, relation, name, unique_id,
                                                           selected_resources.SELECTED_RESOURCES)
            decisions.decided[name] = predicate
        logger.info(f"{VAR}: {name} {why}")
        return predicate

    def _project_sample(self) -> Optional[ProjectSample]:
        """The sample the run's ``--vars`` ask for (None: a full build)."""
        return ProjectSample.from_vars(getattr(self.config, "cli_vars", None) or {})

    def _sample_marker(self, model: Dict[str, Any]) -> Optional[str]:
        """What a model or snapshot built in this run is marked with (None: a full build)."""
        if model.get("resource_type") not in ("model", "snapshot"):
            return None
        sample = self._project_sample()
        return None if sample is None else sample.marker()

    def _with_sample_marker(self, model: Dict[str, Any], config: QbeastModelConfig) -> QbeastModelConfig:
        """``config`` with the sampled-build property among its table properties, in a sampled
        run (the catalog entry is then registered with it; a full build registers without)."""
        marker = self._sample_marker(model)
        if marker is None:
            return config
        return dataclasses.replace(config, tblproperties={**config.tblproperties, SAMPLED_PROPERTY: marker})

    @available
    def qbeast_mark_sample(self, relation: Any, model: Dict[str, Any]) -> None:
        """Mark a table or view that another materialization built in a sampled run with the
        sampled-build property; in a full run, take the mark off a relation that had it (a
        rebuilt table or view lost it already, an incremental table keeps its properties)."""
        if relation is None or getattr(relation, "is_qbeast", False) or qbeast_spelling(model.get("config") or {}):
            return  # Qbeast tables carry the mark in their registration
        kind = swaps.kind_word(relation)
        marker = self._sample_marker(model)
        if marker is not None:
            self._engine().sql(f"alter {kind} {relation.render()} set tblproperties "
                               f"({sql_string(SAMPLED_PROPERTY)} = {sql_string(marker)})")
            return
        if model.get("resource_type") not in ("model", "snapshot"):
            return
        cached = self.get_relation(relation.database, relation.schema, relation.identifier)
        if cached is not None and sampled_marker(getattr(cached, "information", None) or ""):
            self._engine().sql(f"alter {kind} {relation.render()} unset tblproperties if exists "
                               f"({sql_string(SAMPLED_PROPERTY)})")

    def _project_sample_decision(self, sample: ProjectSample, decisions: SampleDecisions,
                                 relation: Any, name: str, unique_id: Optional[str],
                                 selected: Any) -> Tuple[Optional[str], str]:
        if unique_id is not None and unique_id in (selected or ()):
            return None, "read whole: it is built in this run, from sampled inputs"
        engine = self._engine()
        described = self._swaps(engine).described(relation)
        info = described.information
        if not info:
            return None, "read whole: not in the catalog yet"
        marker = sampled_marker(info)
        if marker is not None:
            return None, f"read whole: it was built from a sample ({SAMPLED_PROPERTY}={marker})"
        location = described.location
        if not described.is_qbeast or not location:
            return None, (f"read whole: a {described.facts.get('Provider', 'non-qbeast')} table "
                          "has no row weights")
        if sample.key is not None:
            types = column_types(info)
            if sample.key.lower() not in types:
                return None, f"read whole: it has no column {sample.key}"
            warning = decisions.check_key_type(name, sample.key, types[sample.key.lower()])
            if warning:
                logger.warning(warning)
        with operation_errors(VAR):
            predicate, prunes = engine.sample_filter(location, sample.fraction, sample.key)
        how = "" if prunes else (f" (filtered row by row: its index is not on {sample.key} "
                                 "alone, so no file is skipped)")
        return predicate, f"read as {sample.describe()}{how}"

    @available
    def qbeast_sample_predicate(self, relation: Any, fraction: Any) -> str:
        """The row filter of ``qbeast_sample(relation, fraction)``: ``hash(indexed columns) < w``.

        A filter rather than a table option, because Spark may share one relation between the
        references to a table in a query; the engine (and the JVM read bridge) prune files by it.
        """

        op = "qbeast_sample"
        share = ops.check_number(op, "fraction", fraction, 0.0, 1.0, low_open=True)
        schema = getattr(relation, "schema", None)
        identifier = getattr(relation, "identifier", None)
        if not schema or not identifier:
            raise QbeastModelConfigError(
                f"qbeast_sample: invalid relation {relation!r}; allowed values: a relation of a "
                "qbeast model or source, e.g. ref('events')"
            )
        engine = self._engine()
        location = ops.catalog_location(engine, op, str(schema), str(identifier))
        with operation_errors(op):
            return str(engine.sample_predicate(location, share))

    @available
    def qbeast_approx(self, location: str, aggregates: Any, group_by: Any = None,
                      filter: Any = None, tolerance: Any = 0.01, confidence: Any = 0.95,  # noqa: A002
                      max_fraction: Any = 1.0, as_sql: bool = False) -> Any:
        """``QbeastTable.approx`` on the table at ``location``: the answer as a SQL relation
        (``as_sql``, for ``{{ qbeast_approx(...) }}`` in a model) or as logged rows (the
        run-operation)."""

        from dbt.adapters.qbeast.approx_sql import values_sql

        op = "qbeast_approx" if as_sql else "qbeast_approx_print"
        if isinstance(aggregates, str):
            aggregates = [aggregates]
        if not isinstance(aggregates, (list, tuple)) or not aggregates:
            raise ops.argument_error(op, "aggregates", aggregates,
                                     "a list of count(*), count(col), sum(col), avg(col)")
        tol = ops.check_number(op, "tolerance", tolerance, 0.0, 1.0, low_open=False)
        conf = ops.check_number(op, "confidence", confidence, 0.0, 1.0, low_open=True)
        share = ops.check_number(op, "max_fraction", max_fraction, 0.0, 1.0, low_open=True)
        with operation_errors(op):
            columns, values = self._engine().approx(
                location, list(aggregates), group_by=group_by, filter=filter, tolerance=tol,
                confidence=conf, max_fraction=share)
            if as_sql:
                return values_sql(columns, values)
            rows = [dict(zip([name for name, _ in columns], row)) for row in values]
        logger.info(f"{op}:\n" + "\n".join(str(r) for r in rows))
        return rows

    @available
    def qbeast_seed(self, model: Dict[str, Any], relation: QbeastRelation,
                    old_relation: Optional[QbeastRelation], agate_table: Any,
                    column_types: Any) -> AdapterResponse:
        """A seed with ``file_format='qbeast'``: its rows, typed as a plain seed's are, written by
        the engine as the Qbeast table of the seed (rebuilt on every ``dbt seed``, one commit, as
        a qbeast model without a strategy)."""
        seed_config = seed_config_from_node(model)
        engine = self._engine()
        if not isinstance(engine, engines.SessionEngine):
            raise engines.not_over_sql(f"seed {model.get('name')} with file_format='qbeast'",
                                       "load it with method: connect (the same server) or "
                                       "session, or drop file_format='qbeast' from the seed")
        names = [str(name) for name in agate_table.column_names]
        with model_errors(str(model.get("name")), "reading the seed file"):
            frame = seeds.seed_frame(engine.spark, agate_table, list(column_types), names,
                                     check=lambda: interrupts.check(f"seed {model.get('name')}"))
        return self.qbeast_write(model, relation, old_relation, "", seed_config, False, frame=frame)

    @available
    def qbeast_load_seed(self, relation: Any, agate_table: Any, column_types: Any) -> Optional[int]:
        """Load a seed's rows into its (new, empty) table in one Spark job; the row count, or
        None over ``method: thrift`` (no Spark session here: the macro sends SQL statements).
        See :mod:`seeds`."""
        engine = self._engine()
        if not isinstance(engine, engines.SessionEngine):
            return None
        name = str(getattr(relation, "identifier", relation))
        interrupts.check(f"seed {name}")
        try:
            return seeds.load_seed(engine.spark, relation.render(), agate_table, list(column_types),
                                   check=lambda: interrupts.check(f"seed {name}"))
        except Exception as exc:
            if interrupts.requested():
                raise interrupts.Cancelled(f"seed {name}: {interrupts.CANCELLED_MESSAGE}") from exc
            raise DbtDatabaseError(f"seed {name}: {statement_error(exc)}") from exc

    # -- methods for the run-operations (macros in run_operations.sql) --------------------------

    @available
    def qbeast_operation_words(self, operation: str) -> str:
        """How a macro's error names it: ``run-operation qbeast_vacuum``, or ``qbeast_sample``
        for a macro called in a model."""
        return operation_words(operation)

    @available
    def qbeast_table_location(self, operation: str, schema: Any, identifier: Any = None) -> str:
        """Folder of a table named by ``schema.identifier`` (catalog lookup) or by a path."""
        if identifier is None:
            return ops.check_path(operation, "relation_or_path", schema)
        return ops.catalog_location(self._engine(), operation, str(schema), str(identifier))

    @available
    def qbeast_optimize(self, location: str, revision_id: Any = None, fraction: Any = 1.0,
                        files: Any = None) -> Dict[str, Any]:
        """``QbeastTable.optimize`` on the table at ``location``."""

        op = "qbeast_optimize"
        revision = ops.check_int(op, "revision_id", revision_id, 0)
        share = ops.check_number(op, "fraction", fraction, 0.0, 1.0, low_open=True)
        chosen = ops.check_files(op, files)
        return self._operation(op, "optimize", location, revision_id=revision, fraction=share,
                               files=chosen)

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
        return self._operation(op, "convert_to_qbeast", location, columns_to_index=[s.text for s in specs],
                               cube_size=size, source_format=source_format)

    @available
    def qbeast_upgrade_format(self, location: str, dry_run: Any = False) -> Dict[str, Any]:
        """``qbeast.upgrade_format``: rewrite older tag generations to the current one."""

        op = "qbeast_upgrade_format"
        dry = ops.check_bool(op, "dry_run", dry_run)
        return self._operation(op, "upgrade_format", location, dry_run=dry)

    @available
    def qbeast_vacuum(self, location: str, retention_hours: Any = 168, dry_run: Any = False,
                      allow_short_retention: Any = False) -> Dict[str, Any]:
        """``QbeastTable.vacuum``: delete files no version inside the retention window uses."""

        op = "qbeast_vacuum"
        hours = ops.check_number(op, "retention_hours", retention_hours, 0.0, None, low_open=False)
        dry = ops.check_bool(op, "dry_run", dry_run)
        short = ops.check_bool(op, "allow_short_retention", allow_short_retention)
        return self._operation(op, "vacuum", location, retention_hours=hours, dry_run=dry,
                               allow_short_retention=short)

    @available
    def qbeast_index_metrics(self, location: str, revision_id: Any = None) -> Dict[str, Any]:
        """``QbeastTable.index_metrics``: cubes, blocks, files and element counts of a revision."""

        op = "qbeast_index_metrics"
        revision = ops.check_int(op, "revision_id", revision_id, 0)
        return self._operation(op, "index_metrics", location, revision_id=revision)

    @available
    def qbeast_explain_read(self, location: str, filter: Any = None,  # noqa: A002
                            fraction: Any = None) -> Dict[str, Any]:
        """``QbeastTable.explain_read``: what a read with ``filter`` sampled to ``fraction`` opens,
        one line per reason (index boxes, weight bands, min/max statistics) with the totals."""

        op = "qbeast_explain_read"
        share = None if fraction is None else ops.check_number(op, "fraction", fraction, 0.0, 1.0,
                                                               low_open=True)
        if filter is not None and (not isinstance(filter, str) or not filter.strip()):
            raise ops.argument_error(op, "filter", filter, "none or a SQL predicate on the table's "
                                     "columns, e.g. \"x < 10\"")
        return self._operation(op, "explain_read", location, filter=filter, fraction=share)

    def _operation(self, op: str, name: str, location: str, **arguments: Any) -> Dict[str, Any]:
        """Run table operation ``name`` on the engine, log its summary (dbt shows it) and hand
        Jinja its result as a plain dict."""
        with operation_errors(op):
            result, summary = self._engine().operation(name, location, **arguments)
        logger.info(f"{op}:\n{summary}")
        return result

    @available
    def qbeast_register_table(self, path: Any, schema: Any, identifier: Any) -> Dict[str, Any]:
        """Register the Qbeast table at ``path`` as catalog table ``schema.identifier``."""
        import qbeast

        op = "qbeast_register_table"
        location = ops.check_path(op, "path", path)
        location = qbeast.local_path(location)
        if "://" not in location and not os.path.isabs(location):
            location = os.path.join(str(self._qbeast_connections.project_root), location)
        for argument, value in (("schema", schema), ("table", identifier)):
            if not isinstance(value, str) or not ops.SQL_NAME.match(value):
                raise ops.argument_error(op, argument, value, "letters, digits and underscores")
        engine = self._engine()
        with operation_errors(op):
            snapshot = engine.table_schema(location)
        if not snapshot.is_qbeast:
            raise ops.argument_error(op, "path", path, "the folder of a Qbeast table (this one is a "
                                     "plain Delta table: make it one with qbeast_convert first)")
        relation = self.Relation.create(schema=schema, identifier=identifier, type=RelationType.Table)
        schemas = engine.sql(f"show schemas like {sql_string(schema)}")
        facts = self._swaps(engine).catalog_facts(relation) if schemas else {}
        if facts and not (facts.get("Provider") == "qbeast"
                          and same_location(qbeast.local_path(facts.get("Location", "")), location)):
            raise ops.argument_error(
                op, "relation", f"{schema}.{identifier}",
                f"a name that is free or already this table (it is a {facts.get('Provider') or 'view'} "
                f"table at {facts.get('Location', 'no location')})")
        engine.sql(f"create schema if not exists {schema}")
        config = QbeastModelConfig(model=f"{schema}.{identifier}", columns_to_index=(),
                                   cube_size=None, location_root=None)
        self._register_qbeast_table(engine, relation, location, config)
        self._names(record=(relation, location))
        logger.info(f"{op}: {relation} is the Qbeast table at {location} "
                    f"(version {snapshot.version})")
        return {"relation": relation.render(), "location": location, "version": snapshot.version}

    @staticmethod
    def _register_qbeast_table(
        engine: Any, relation: QbeastRelation, location: str, model_config: QbeastModelConfig,
        refresh: bool = True,
    ) -> None:
        """Point catalog table ``relation`` (``USING qbeast``, external) at ``location`` (unless
        ``refresh`` is False and the entry is still current: ``qbeast.ensure_catalog_table``).

        Re-created on every write so that its schema follows the table's; dropping an external
        table never deletes its files. ``persist_docs`` comments and ``tblproperties`` go to the
        engine's ``qbeast.create_table``, which keeps column comments in the schema (so no ALTER
        COLUMN statement ever rewrites the column metadata that carries the location).
        """
        engine.register(relation.render(), location, refresh, model_config.column_comments,
                        model_config.tblproperties, model_config.table_comment)


def _sampled_stats(relation: Any) -> Dict[str, Any]:
    """``stats:sampled:*`` of a relation built in a sampled run (``qbeast_sample`` var), so that
    ``catalog.json`` and the docs site say it holds a sample, not the full build."""
    marker = sampled_marker(getattr(relation, "information", None) or "")
    if marker is None:
        return {}
    return {"stats:sampled:label": "Sampled build", "stats:sampled:value": marker,
            "stats:sampled:description": f"built with --vars '{{{VAR}: ...}}' ({SAMPLED_PROPERTY}); "
                                         "a full build clears it",
            "stats:sampled:include": True}


def _drop_unknown_row_count(row: Dict[str, Any]) -> None:
    """Take ``stats:rows:*`` out of a catalog row that says 0 rows over files of some bytes.

    The Hive metastore records ``numRows=0`` for a table it creates and Spark's writes do not
    update it (only ``ANALYZE TABLE`` does), so dbt-spark showed ``rows: 0`` for a table model of
    thousands of rows. The count is unknown, not zero: dbt shows no row count rather than a
    wrong one; the bytes stay."""
    if row.get("stats:rows:value") == 0 and (row.get("stats:bytes:value") or 0) > 0:
        for part in ("label", "value", "description", "include"):
            row.pop(f"stats:rows:{part}", None)
