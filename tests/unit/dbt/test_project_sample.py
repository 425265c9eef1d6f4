"""The sampled run's var, the schema text it reads key types from, and how a sampled relation
renders inside dbt's own limit and time window (no Spark: the decisions' inputs and outputs)."""
from __future__ import annotations

from datetime import datetime

import pytest

from dbt.adapters.qbeast.errors import QbeastModelConfigError
from dbt.adapters.qbeast.project_sample import ProjectSample, SampleDecisions, column_types, sampled_marker
from dbt.adapters.qbeast.relation import QbeastRelation


def test_the_var_is_a_fraction_or_a_fraction_and_a_key():
    assert ProjectSample.from_vars({}) is None
    assert ProjectSample.from_vars({"qbeast_sample": None}) is None
    assert ProjectSample.from_vars({"qbeast_sample": 0.01}) == ProjectSample(0.01)
    assert ProjectSample.from_vars({"qbeast_sample": 1}) == ProjectSample(1.0)
    assert (ProjectSample.from_vars({"qbeast_sample": {"fraction": 0.1, "key": " customer_id "}})
            == ProjectSample(0.1, "customer_id"))
    assert ProjectSample(0.1, "customer_id").describe() == "a 0.1 sample on the hash of customer_id"
    assert ProjectSample(0.25).describe() == "a 0.25 sample on its own index"


@pytest.mark.parametrize("value, message", [
    (0, "invalid fraction 0"), (1.5, "invalid fraction 1.5"), ("0.1", "invalid fraction '0.1'"),
    (True, "invalid fraction True"), ({"key": "id"}, "invalid value"),
    ({"fraction": 0.1, "column": "id"}, "invalid value"), ({"fraction": 0.1, "key": ""}, "invalid key ''"),
    ({"fraction": 2, "key": "id"}, "invalid fraction 2"),
])
def test_bad_values_name_the_var_and_the_allowed_values(value, message):
    with pytest.raises(QbeastModelConfigError) as raised:
        ProjectSample.from_vars({"qbeast_sample": value})
    assert f"qbeast_sample: {message}" in str(raised.value)
    assert "allowed values" in str(raised.value)


def test_key_types_come_from_the_top_level_columns_of_the_schema_tree():
    information = ("Database: s\nTable: orders\nProvider: qbeast\nSchema: root\n"
                   " |-- order_id: long (nullable = true)\n |-- Customer_Id: integer (nullable = true)\n"
                   " |-- address: struct (nullable = true)\n |    |-- customer_id: string (nullable = true)\n")
    assert column_types(information) == {"order_id": "long", "customer_id": "integer", "address": "struct"}


def test_a_key_in_another_type_is_reported_once_per_table():
    decisions = SampleDecisions.empty()
    assert decisions.check_key_type("s.customers", "customer_id", "long") is None
    assert decisions.check_key_type("s.orders", "customer_id", "long") is None
    warning = decisions.check_key_type("s.returns", "customer_id", "integer")
    assert warning is not None and "customer_id is integer in s.returns but long in s.customers" in warning
    assert decisions.check_key_type("s.x", "customer_id", None) is None


def _relation(**fields) -> QbeastRelation:
    return QbeastRelation.create(schema="s", identifier="orders", **fields)


def test_a_sampled_relation_renders_its_filter_inside_dbt_limit_and_time_window():
    from dbt.adapters.base.relation import EventTimeFilter

    plain = _relation()
    assert str(plain) == "s.orders"
    sampled = plain.incorporate(sample_filter="hash(`id`) < 0")
    assert sampled.render() == "s.orders"  # statements naming the table itself
    assert str(sampled) == "(select * from s.orders where hash(`id`) < 0)"
    empty = _relation(limit=0, sample_filter="hash(`id`) < 0")
    assert str(empty) == "(select * from (select * from s.orders where hash(`id`) < 0) where false limit 0)"
    window = EventTimeFilter(field_name="ts", start=datetime(2024, 1, 1), end=datetime(2024, 1, 2))
    timed = _relation(event_time_filter=window, sample_filter="hash(`id`) < 0")
    assert str(timed) == ("(select * from (select * from s.orders where hash(`id`) < 0) "
                          "where ts >= '2024-01-01 00:00:00' and ts < '2024-01-02 00:00:00')")


def test_the_mark_of_a_sampled_build_is_read_from_the_table_properties():
    assert ProjectSample(0.01).marker() == "0.01" and ProjectSample(0.5, "id").marker() == "0.5 on id"
    info = ("Type: MANAGED\nProvider: parquet\n"
            "Table Properties: [owner=x, qbeast.sampled=0.01 on customer_id, transient_lastDdlTime=1]\n")
    assert sampled_marker(info) == "0.01 on customer_id"
    assert sampled_marker("Table Properties: [owner=x]\n") is None
    assert sampled_marker("") is None
