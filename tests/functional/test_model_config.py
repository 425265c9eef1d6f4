"""Validation of a qbeast model's config (pure Python, before any Spark work)."""
from __future__ import annotations

import re

import pytest

from dbt.adapters.qbeast.config_keys import QBEAST_KEYS
from dbt.adapters.qbeast.errors import QbeastModelConfigError
from dbt.adapters.qbeast.model_config import (
    model_config_from_node,
    parse_model_config,
    snapshot_config_from_node,
)
from qbeast.errors import InvalidOptionError


def test_list_and_string_specs_normalize_to_the_same_columns():
    as_list = parse_model_config("m", ["a", "b:Hashing"], 1000)
    as_string = parse_model_config("m", " a , b:hashing ", "1000")
    assert as_list.columns_to_index == as_string.columns_to_index == ("a", "b:hashing")
    assert as_list.cube_size == as_string.cube_size == 1000
    assert as_list.column_names == ["a", "b"]


def test_no_strategy_rebuilds_and_append_is_the_only_strategy_today():
    rebuilt = parse_model_config("m", ["a"])
    assert rebuilt.incremental_strategy is None and not rebuilt.is_incremental
    assert rebuilt.write_mode(incremental_run=True) == "overwrite"
    appended = parse_model_config("m", ["a"], incremental_strategy=" Append ")
    assert appended.incremental_strategy == "append" and appended.warnings == ()
    assert appended.write_mode(incremental_run=True) == "append"
    assert appended.write_mode(incremental_run=False) == "overwrite"  # first run, full refresh


def test_deprecated_write_mode_maps_to_a_strategy_with_a_warning():
    legacy = parse_model_config("m", ["a"], write_mode="append")
    assert legacy.incremental_strategy == "append"
    assert legacy.warnings == ("model m: config write_mode='append' is deprecated; use "
                               "incremental_strategy='append' (docs/dbt.md, 'Rebuild or increment')",)
    overwrite = parse_model_config("m", ["a"], write_mode=" Overwrite ")
    assert overwrite.incremental_strategy is None
    assert "rebuilds its table on every run" in overwrite.warnings[0]
    same = parse_model_config("m", ["a"], incremental_strategy="append", write_mode="append")
    assert same.incremental_strategy == "append"


@pytest.mark.parametrize(
    ("kwargs", "option", "allowed"),
    [
        ({"columns_to_index": None}, "columns_to_index", "allowed values: a list of the model's column"),
        ({"columns_to_index": []}, "columns_to_index", "allowed values: a non-empty list"),
        ({"columns_to_index": "a,,b"}, "columns_to_index", "allowed values: a non-empty list"),
        ({"columns_to_index": ["a:zorder"]}, "columns_to_index", "linear, hashing, quantiles, histogram"),
        ({"columns_to_index": ["a:"]}, "columns_to_index", "linear, hashing, quantiles, histogram"),
        ({"columns_to_index": [3]}, "columns_to_index", "allowed values: a non-empty list"),
        ({"columns_to_index": ["a", "A"]}, "columns_to_index", "each column at most once"),
        ({"cube_size": 0}, "cube_size", "a positive integer"),
        ({"cube_size": -5}, "cube_size", "a positive integer"),
        ({"cube_size": "many"}, "cube_size", "a positive integer"),
        ({"cube_size": 2.5}, "cube_size", "a positive integer"),
        ({"cube_size": True}, "cube_size", "a positive integer"),
        ({"write_mode": "merge"}, "write_mode", "append, overwrite (deprecated"),
        ({"incremental_strategy": "insert_overwrite"}, "incremental_strategy",
         "append, merge, delete+insert, microbatch (or leave it out"),
        ({"incremental_strategy": "append", "write_mode": "overwrite"}, "write_mode", "which disagree"),
        ({"location_root": ""}, "location_root", "a folder path"),
    ],
)
def test_bad_values_name_model_option_and_allowed_values(kwargs, option, allowed):
    values = {"columns_to_index": ["a"], **kwargs}
    with pytest.raises(QbeastModelConfigError) as raised:
        parse_model_config("my_model", **values)
    message = str(raised.value)
    assert "model my_model" in message and option in message and allowed in message
    assert isinstance(raised.value, InvalidOptionError)


def test_indexed_columns_must_be_model_outputs_case_insensitively():
    config = parse_model_config("m", ["Event_Time", "user_id"])
    config.check_columns_exist(["event_time", "USER_ID", "price"])
    with pytest.raises(QbeastModelConfigError, match="user_id.*allowed values: event_time, price"):
        config.check_columns_exist(["event_time", "price"])


def test_qbeast_spark_spellings_and_standard_dbt_keys_are_accepted():
    node = {
        "name": "m",
        "config": {"columnsToIndex": "a,b", "cubeSize": 50, "columnStats": '{"a_min": 0}',
                   "materialized": "qbeast", "on_schema_change": "ignore", "meta": {},
                   "partition_by": None, "file_format": None, "owner": "team-x", "grants": {},
                   "unique_key": None, "packages": [], "incremental_strategy": None},
    }
    config = model_config_from_node(node)
    assert config.columns_to_index == ("a", "b") and config.cube_size == 50
    assert config.column_stats == '{"a_min": 0}' and config.on_schema_change == "ignore"


@pytest.mark.parametrize(("key", "suggestion"), [("colums_to_index", "columns_to_index"),
                                                 ("cube_sise", "cube_size"),
                                                 ("Optimise_After_Run", "optimize_after_run")])
def test_misspelled_qbeast_keys_name_model_key_and_valid_keys(key, suggestion):
    with pytest.raises(QbeastModelConfigError) as raised:
        model_config_from_node({"name": "m", "config": {"columns_to_index": ["a"], key: 1}})
    message = str(raised.value)
    assert f"model m: unknown config key {key!r} (did you mean {suggestion!r}?)" in message
    assert "valid qbeast keys: " + ", ".join(QBEAST_KEYS) in message


@pytest.mark.parametrize(("key", "suggestion"), [("cube", "cube_size"), ("optimize", "optimize_after_run"),
                                                 ("indexed_columns", "columns_to_index"),
                                                 ("zorder_by", "columns_to_index"),
                                                 ("cluster_by", "columns_to_index"),
                                                 ("nonfinite", "non_finite")])
def test_keys_resembling_qbeast_options_are_refused_with_a_suggestion(key, suggestion):
    with pytest.raises(QbeastModelConfigError, match=f"unknown config key {key!r} \\(did you mean {suggestion!r}"):
        model_config_from_node({"name": "m", "config": {"columns_to_index": ["a"], key: 1}})
    # a user's own key that resembles nothing qbeast does stays allowed (dbt allows any key)
    model_config_from_node({"name": "m", "config": {"columns_to_index": ["a"], "owner_team": "x"}})


@pytest.mark.parametrize(("key", "value", "says"), [
    ("mode", "overwrite", "rebuilds its table on every run"),
    ("partition_by", ["a"], "laid out by its index"),
    ("unique_key", "id", "needs incremental_strategy='merge' or 'delete+insert'"),
    ("grants", {"select": ["x"]}, "no access control"),
    ("file_format", "parquet", "always a Qbeast (Delta) table"),
])
def test_dbt_keys_a_qbeast_model_cannot_honour_are_refused(key, value, says):
    with pytest.raises(QbeastModelConfigError, match=re.escape(says)):
        model_config_from_node({"name": "m", "config": {"columns_to_index": ["a"], key: value}})


def _node(materialized="qbeast", **config):
    return {"name": "m", "config": {"materialized": materialized, "columns_to_index": ["a"], **config}}


def test_strategies_and_their_keys():
    merge = model_config_from_node(_node(incremental_strategy="merge", unique_key=["a", "A", "b"],
                                         incremental_predicates=["DBT_INTERNAL_DEST.a > 1", "b < 2"],
                                         merge_exclude_columns=["c"]))
    assert merge.write_mode(incremental_run=True) == "merge"
    assert merge.write_mode(incremental_run=False) == "overwrite"  # first run, full refresh
    assert merge.unique_key == ("a", "b") and merge.merge_exclude_columns == ("c",)
    assert merge.target_predicate == "(a > 1) and (b < 2)"  # dbt's target alias dropped
    replace = model_config_from_node(_node(incremental_strategy="delete+insert", unique_key="a",
                                           predicates=["a != 2"]))  # dbt's older key
    assert replace.write_mode(True) == "delete_insert" and replace.target_predicate == "(a != 2)"
    # dbt-spark's spelling: incremental defaults to merge with a key, append without
    assert model_config_from_node(_node("incremental", file_format="qbeast", unique_key="a")
                                  ).incremental_strategy == "merge"
    assert model_config_from_node(_node("incremental", file_format="qbeast", unique_key=[])
                                  ).incremental_strategy == "append"
    # a table model ignores incremental keys, as dbt's table materialization does
    table = model_config_from_node(_node("table", file_format="qbeast", unique_key="a",
                                         incremental_strategy="merge"))
    assert table.incremental_strategy is None and table.unique_key == ()
    with pytest.raises(QbeastModelConfigError, match="unique_key names z, which the model"):
        model_config_from_node(_node(incremental_strategy="merge", unique_key="z")
                               ).check_columns_exist(["a", "b"], keyed_run=True)


@pytest.mark.parametrize(("config", "says"), [
    ({"incremental_strategy": "delete+insert"}, "incremental_strategy='delete+insert' needs config unique_key"),
    ({"incremental_strategy": "merge", "unique_key": ""}, "incremental_strategy='merge' needs config unique_key"),
    ({"incremental_strategy": "append", "unique_key": "a"}, "(this model's strategy is 'append')"),
    ({"incremental_strategy": "merge", "unique_key": [1]}, "invalid config unique_key=[1]"),
    ({"incremental_strategy": "merge", "unique_key": "a", "merge_update_columns": "b",
      "merge_exclude_columns": ["c"]}, "sets both merge_update_columns and merge_exclude_columns"),
    ({"incremental_strategy": "delete+insert", "unique_key": "a", "merge_update_columns": ["b"]},
     "merge_update_columns needs incremental_strategy='merge'"),
    ({"incremental_strategy": "append", "incremental_predicates": ["a > 1"]},
     "incremental_predicates needs incremental_strategy='merge' or 'delete+insert'"),
    ({"incremental_strategy": "merge", "unique_key": "a",
      "incremental_predicates": ["dbt_internal_source.a > 1"]}, "cannot name DBT_INTERNAL_SOURCE"),
])
def test_bad_strategy_keys_name_model_option_and_allowed_values(config, says):
    with pytest.raises(QbeastModelConfigError, match=re.escape(says)) as raised:
        model_config_from_node(_node(**config))
    assert "model m: " in str(raised.value)


def test_python_models_refuse_databricks_keys_and_missing_packages():
    node = {"name": "py", "language": "python", "config": {"columns_to_index": ["a"], "cluster_id": "x1"}}
    with pytest.raises(QbeastModelConfigError, match="cluster_id='x1' is a Databricks setting"):
        model_config_from_node(node)
    node["config"] = {"columns_to_index": ["a"], "packages": ["pandas>=2", "surely-not-installed-pkg"]}
    with pytest.raises(QbeastModelConfigError, match="packages lists surely-not-installed-pkg,"):
        model_config_from_node(node)


def test_persist_docs_picks_the_documented_texts():
    node = {"name": "m", "description": "the table",
            "columns": {"a": {"name": "a", "description": "col a"}, "b": {"name": "b", "description": ""}},
            "config": {"columns_to_index": ["a"], "persist_docs": {"relation": True, "columns": True}}}
    config = model_config_from_node(node)
    assert config.table_comment == "the table" and config.column_comments == {"a": "col a"}
    node["config"]["persist_docs"] = {"columns": True}
    config = model_config_from_node(node)
    assert config.table_comment is None and config.column_comments == {"a": "col a"}


def test_snapshots_keep_the_default_maintenance_unless_switched_off():
    def snapshot(**config):
        return {"name": "s", "config": {"unique_key": "id", "file_format": "qbeast", **config}}

    assert snapshot_config_from_node(snapshot()).optimize_after_run
    assert not snapshot_config_from_node(snapshot(optimize_after_run=False)).optimize_after_run
    assert snapshot_config_from_node(snapshot(cube_size=5)).cube_size == 5
    with pytest.raises(QbeastModelConfigError, match=r"optimize_after_run='yes'; allowed values: true, false"):
        snapshot_config_from_node(snapshot(optimize_after_run="yes"))


def test_microbatch_needs_the_incremental_spelling_and_an_event_time():
    node = _node("incremental", file_format="qbeast", incremental_strategy="microbatch",
                 event_time=" ts ", batch_size="day", unique_key="a")
    config = model_config_from_node(node)
    assert config.write_mode(incremental_run=True) == "replace_where"
    assert config.write_mode(incremental_run=False) == "overwrite"  # first batch, full refresh
    assert config.event_time == "ts" and config.unique_key == ()  # the key plays no part...
    assert "unique_key='a' has no effect" in config.warnings[0]  # ...and the user is told
    with pytest.raises(QbeastModelConfigError, match="event_time names ts, which the model"):
        config.check_columns_exist(["a", "b"])
    # dbt runs batches only for materialized='incremental': 'qbeast' would be one big batch
    with pytest.raises(QbeastModelConfigError, match=re.escape(
            "needs materialized='incremental' with file_format='qbeast'")):
        model_config_from_node(_node(incremental_strategy="microbatch", event_time="ts"))
    with pytest.raises(QbeastModelConfigError, match="invalid config event_time=None"):
        model_config_from_node(_node("incremental", file_format="qbeast",
                                     incremental_strategy="microbatch"))


def test_a_batch_window_becomes_a_half_open_condition_on_the_event_time():
    import datetime as dt

    from dbt.adapters.qbeast.microbatch import batch_window, window_condition

    utc = dt.timezone.utc
    batch = {"event_time_start": dt.datetime(2026, 1, 2, tzinfo=utc),
             "event_time_end": "2026-01-03T00:00:00+00:00"}  # as dbt serializes it
    window = batch_window({"name": "m", "batch": batch})
    assert window == (dt.datetime(2026, 1, 2, tzinfo=utc), dt.datetime(2026, 1, 3, tzinfo=utc))
    assert window_condition("event time", window) == (
        "`event time` >= timestamp'2026-01-02 00:00:00.000000+00:00' and "
        "`event time` < timestamp'2026-01-03 00:00:00.000000+00:00'")
    # dbt 1.9's config keys; a naive bound is UTC; no batch at all: None
    legacy = {"__dbt_internal_microbatch_event_time_start": dt.datetime(2026, 1, 2),
              "__dbt_internal_microbatch_event_time_end": dt.datetime(2026, 1, 2, 1)}
    assert batch_window({"name": "m", "config": legacy})[1] == dt.datetime(2026, 1, 2, 1, tzinfo=utc)
    assert batch_window({"name": "m", "config": {}}) is None
    with pytest.raises(QbeastModelConfigError, match="'yesterday' is not a timestamp"):
        batch_window({"name": "m", "batch": {**batch, "event_time_start": "yesterday"}})
    with pytest.raises(QbeastModelConfigError, match="is empty"):
        batch_window({"name": "m", "batch": {**batch, "event_time_start": batch["event_time_end"]}})
