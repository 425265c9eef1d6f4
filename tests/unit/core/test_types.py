"""Indexable data types (FORMAT §3.0) and canonical values."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pytest

from qbeast.core.types import QDataType, canonical_array, qdatatype_from_spark_name, to_canonical
from qbeast.errors import FormatError, InvalidOptionError, UnsupportedTypeError


def test_the_eight_json_names():
    assert sorted(t.value for t in QDataType) == sorted([
        "DoubleDataType", "IntegerDataType", "FloatDataType", "LongDataType",
        "StringDataType", "DecimalDataType", "TimestampDataType", "DateDataType",
    ])
    assert [t for t in QDataType if not t.is_ordered] == [QDataType.STRING]


def test_from_json_name_round_trip_and_error():
    for t in QDataType:
        assert QDataType.from_json_name(t.json_name) is t
    with pytest.raises(FormatError, match="BooleanDataType.*DoubleDataType"):
        QDataType.from_json_name("BooleanDataType")


@pytest.mark.parametrize(
    "name,expected",
    [("int", QDataType.INTEGER), ("integer", QDataType.INTEGER), ("bigint", QDataType.LONG),
     ("double", QDataType.DOUBLE), ("float", QDataType.FLOAT), ("string", QDataType.STRING),
     ("date", QDataType.DATE), ("timestamp", QDataType.TIMESTAMP), ("decimal(10,2)", QDataType.DECIMAL),
     ("decimal(38, 18)", QDataType.DECIMAL), ("DOUBLE", QDataType.DOUBLE)],
)
def test_spark_names(name, expected):
    assert qdatatype_from_spark_name(name) is expected


@pytest.mark.parametrize(
    "name", ["timestamp_ntz", "smallint", "tinyint", "boolean", "binary", "struct<a:int>", "array<int>",
             "map<string,int>", "string collate UTF8_LCASE", "void"],
)
def test_unsupported_spark_types_name_column_and_alternatives(name):
    with pytest.raises(UnsupportedTypeError) as info:
        qdatatype_from_spark_name(name, column="price")
    message = str(info.value)
    assert "'price'" in message and repr(name) in message
    assert "int, bigint, double, float, decimal(p,s), string, date, timestamp" in message


def test_canonical_dates_and_timestamps_are_utc_epoch_millis():
    assert to_canonical(dt.date(1970, 1, 2), QDataType.DATE) == 86_400_000
    assert to_canonical(dt.date(1969, 12, 31), QDataType.DATE) == -86_400_000
    assert to_canonical(dt.datetime(2024, 3, 1, 12, 30, 15, 123999), QDataType.DATE) == 1709251200000
    assert to_canonical(dt.datetime(1970, 1, 1, 0, 0, 1, 999), QDataType.TIMESTAMP) == 1000
    # sub-millisecond parts are floored, as java.sql.Timestamp.getTime does before 1970
    assert to_canonical(dt.datetime(1969, 12, 31, 23, 59, 59, 999500), QDataType.TIMESTAMP) == -1
    aware = dt.datetime(1970, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert to_canonical(aware, QDataType.TIMESTAMP) == 0
    assert to_canonical(np.datetime64("1969-12-31T23:59:59.999500", "us"), QDataType.TIMESTAMP) == -1
    assert to_canonical(np.datetime64("NaT"), QDataType.TIMESTAMP) is None


def test_canonical_numbers():
    assert to_canonical(np.int32(7), QDataType.INTEGER) == 7
    assert to_canonical(7.0, QDataType.LONG) == 7
    assert to_canonical(decimal.Decimal("1.25"), QDataType.DECIMAL) == 1.25
    assert to_canonical(0.1, QDataType.FLOAT) == float(np.float32(0.1))
    assert to_canonical(None, QDataType.DOUBLE) is None
    assert to_canonical("x", QDataType.STRING) == "x"


@pytest.mark.parametrize(
    "value,data_type",
    [(2**31, QDataType.INTEGER), (2**63, QDataType.LONG), (1.5, QDataType.INTEGER), (True, QDataType.INTEGER),
     ("1", QDataType.DOUBLE), (5, QDataType.STRING), ("2024-01-01", QDataType.DATE)],
)
def test_values_that_do_not_fit_are_errors(value, data_type):
    with pytest.raises(InvalidOptionError, match="column 'c'"):
        to_canonical(value, data_type, "c")


def test_canonical_array_of_datetimes_and_floats():
    stamps = np.array(["1969-12-31T23:59:59.999500", "1970-01-01T00:00:01.001999", "NaT"], dtype="datetime64[us]")
    assert canonical_array(stamps, QDataType.TIMESTAMP).tolist() == [-1, 1001, 0]
    days = np.array(["1970-01-02", "1969-12-31"], dtype="datetime64[D]")
    assert canonical_array(days, QDataType.DATE).tolist() == [86_400_000, -86_400_000]
    assert canonical_array(np.array([0.1]), QDataType.FLOAT).dtype == np.float32
    ints = np.array([1, 2])
    assert canonical_array(ints, QDataType.LONG) is ints
    with pytest.raises(InvalidOptionError, match="feed a double column"):
        canonical_array(days, QDataType.DOUBLE)
