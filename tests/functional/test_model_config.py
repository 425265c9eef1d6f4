"""Validation of a qbeast model's config (pure Python, before any Spark work)."""
from __future__ import annotations

import pytest

from dbt.adapters.qbeast.errors import QbeastModelConfigError
from dbt.adapters.qbeast.model_config import parse_model_config
from qbeast.errors import InvalidOptionError


def test_list_and_string_specs_normalize_to_the_same_columns():
    as_list = parse_model_config("m", ["a", "b:Hashing"], 1000)
    as_string = parse_model_config("m", " a , b:hashing ", "1000")
    assert as_list.columns_to_index == as_string.columns_to_index == ("a", "b:hashing")
    assert as_list.cube_size == as_string.cube_size == 1000
    assert as_list.write_mode == "overwrite" and as_list.column_names == ["a", "b"]


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
