"""Validation of a qbeast model's config (pure Python, before any Spark work)."""
from __future__ import annotations

import pytest

from dbt.adapters.qbeast.errors import QbeastModelConfigError
from dbt.adapters.qbeast.model_config import QBEAST_KEYS, model_config_from_node, parse_model_config
from qbeast.errors import InvalidOptionError


def test_list_and_string_specs_normalize_to_the_same_columns():
    as_list = parse_model_config("m", ["a", "b:Hashing"], 1000)
    as_string = parse_model_config("m", " a , b:hashing ", "1000")
    assert as_list.columns_to_index == as_string.columns_to_index == ("a", "b:hashing")
    assert as_list.cube_size == as_string.cube_size == 1000
    assert as_list.column_names == ["a", "b"]


def test_write_mode_defaults_to_append_and_accepts_overwrite():
    assert parse_model_config("m", ["a"]).write_mode == "append"
    assert parse_model_config("m", ["a"], write_mode=" Overwrite ").write_mode == "overwrite"


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
        ({"write_mode": "merge"}, "write_mode", "overwrite, append"),
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
                   "partition_by": None, "file_format": None, "owner": "team-x"},
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


def test_persist_docs_picks_the_documented_texts():
    node = {"name": "m", "description": "the table",
            "columns": {"a": {"name": "a", "description": "col a"}, "b": {"name": "b", "description": ""}},
            "config": {"columns_to_index": ["a"], "persist_docs": {"relation": True, "columns": True}}}
    config = model_config_from_node(node)
    assert config.table_comment == "the table" and config.column_comments == {"a": "col a"}
    node["config"]["persist_docs"] = {"columns": True}
    config = model_config_from_node(node)
    assert config.table_comment is None and config.column_comments == {"a": "col a"}
