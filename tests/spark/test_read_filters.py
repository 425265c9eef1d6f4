"""Core expressions given by users are retyped against a Spark schema, and the parser's epoch
functions mean what Spark computes (the parser's own tests, pure, are in tests/unit/read)."""
from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from qbeast.core import expressions as ex
from qbeast.errors import InvalidOptionError
from qbeast.spark.read.predicates import normalize_predicate

pytestmark = pytest.mark.spark

SCHEMA = StructType(
    [
        StructField("user_id", IntegerType()),
        StructField("Brand", StringType()),
        StructField("price", DoubleType()),
        StructField("big", LongType()),
        StructField("day", DateType()),
        StructField("ts", TimestampType()),
        StructField("amount", DecimalType(10, 2)),
    ]
)

UTC = dt.timezone.utc


def test_normalize_retypes_literals_and_names_unknown_columns():
    got = normalize_predicate(ex.And(ex.EqualTo("USER_ID", 3.0), ex.In("brand", ("x",))), SCHEMA)
    assert got == ex.And(ex.EqualTo("user_id", 3), ex.In("Brand", ("x",)))
    with pytest.raises(InvalidOptionError, match="nope"):
        normalize_predicate(ex.EqualTo("nope", 1), SCHEMA)


def test_epoch_functions_mean_what_spark_computes(spark):
    from qbeast.spark.read.sql_parser import _SqlPredicateParser

    for call in ("timestamp_micros(1704067200123456)", "timestamp_millis(-86400001)",
                 "timestamp_seconds(1704153600.25)"):
        parsed = _SqlPredicateParser(call, {}).parse_operand()[1]
        micros = spark.sql(f"SELECT unix_micros({call}) AS m").first()["m"]
        assert parsed == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=micros), call
