"""Transformers (FORMAT §3): JSON, stats SQL, fitting, the columnsToIndex spec and columnStats."""
from __future__ import annotations

import json
import random

import pytest

from qbeast.core.transformations import (
    DEFAULT_HISTOGRAM,
    CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation,
    EmptyTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    StringHistogramTransformation,
)
from qbeast.core.transformers import (
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformer,
    ColumnSpec,
    EmptyTransformer,
    HashTransformer,
    LinearTransformer,
    StringHistogramTransformer,
    make_transformer,
    parse_column_stats,
    parse_columns_to_index,
    transformer_from_json_obj,
)
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError

P = "io.qbeast.core.transform."
D, I, S, TS, DT = QDataType.DOUBLE, QDataType.INTEGER, QDataType.STRING, QDataType.TIMESTAMP, QDataType.DATE


@pytest.mark.parametrize(
    "transformer,text",
    [
        (LinearTransformer("x", D), f'{{"className":"{P}LinearTransformer","columnName":"x","dataType":"DoubleDataType"}}'),
        (HashTransformer("x", S), f'{{"className":"{P}HashTransformer","columnName":"x","dataType":"StringDataType"}}'),
        (HashTransformer("n", I), f'{{"className":"{P}HashTransformer","columnName":"n","dataType":"IntegerDataType"}}'),
        (CDFStringQuantilesTransformer("x"), f'{{"className":"{P}CDFStringQuantilesTransformer","columnName":"x"}}'),
        (CDFNumericQuantilesTransformer("x", D),
         f'{{"className":"{P}CDFNumericQuantilesTransformer","columnName":"x","orderedDataType":"DoubleDataType"}}'),
        (StringHistogramTransformer("brand", S),
         f'{{"className":"{P}StringHistogramTransformer","columnName":"brand","dataType":"StringDataType"}}'),
        (EmptyTransformer("x"), f'{{"className":"{P}EmptyTransformer","columnName":"x"}}'),
    ],
)
def test_transformer_json_exact_and_round_trip(transformer, text):
    assert transformer.to_json() == text
    assert transformer_from_json_obj(json.loads(text)) == transformer


@pytest.mark.parametrize(
    "obj,match",
    [
        ({"className": P + "FooTransformer", "columnName": "x"}, "FooTransformer"),
        ({"className": P + "LinearTransformer", "columnName": "x"}, "dataType"),
        ({"className": P + "LinearTransformer", "columnName": 3, "dataType": "DoubleDataType"}, "columnName"),
        ({"className": P + "LinearTransformer", "columnName": "x", "dataType": "StringDataType"}, "linear"),
        ({"className": P + "StringHistogramTransformer", "columnName": "x", "dataType": "IntegerDataType"}, "histogram"),
        ("nope", "object"),
    ],
)
def test_transformer_json_errors(obj, match):
    with pytest.raises(FormatError, match=match):
        transformer_from_json_obj(obj)


def test_stats_sql_and_keys():
    assert LinearTransformer("price", D).stats_sql() == ["min(`price`) AS `price_min`", "max(`price`) AS `price_max`"]
    assert LinearTransformer("we`ird", D).stats_sql()[0] == "min(`we``ird`) AS `we``ird_min`"
    assert HashTransformer("x", S).stats_sql() == []
    assert CDFNumericQuantilesTransformer("x", D).stats_sql() == []
    hist = StringHistogramTransformer("b", S).stats_sql()
    assert hist == ["array(" + ", ".join(f"'{c}'" for c in "abcdefghijklmnopqrstuvwxyz") + ") AS `b_histogram`"]
    assert LinearTransformer("x", D).spec == "x:linear"
    assert CDFStringQuantilesTransformer("x").stats_keys() == ("x_quantiles",)


def test_linear_make_transformation():
    t = LinearTransformer("x", I)
    rng = random.Random(1)
    lin = t.make_transformation({"x_min": 3, "x_max": 9}, rng)
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (3, 9)
    assert 3 <= lin.null_value <= 9 and isinstance(lin.null_value, int)
    assert t.make_transformation({"x_min": 4, "x_max": 4}) == IdentityTransformation(4, I)
    assert t.make_transformation({"x_min": None, "x_max": None}) == IdentityTransformation(None, I)
    assert t.make_transformation({"x_min": None, "x_max": 5}) == IdentityTransformation(5, I)
    assert t.make_transformation({}) == IdentityTransformation(None, I)
    with pytest.raises(InvalidOptionError, match="x_max"):
        LinearTransformer("x", D).make_transformation({"x_min": 0.0, "x_max": float("nan")})


def test_other_make_transformation():
    assert isinstance(HashTransformer("x", S).make_transformation({}), HashTransformation)
    q = CDFNumericQuantilesTransformer("x", D)
    assert q.make_transformation({}) == EmptyTransformation()
    assert q.make_transformation({"x_quantiles": [1, 2.5]}) == CDFNumericQuantilesTransformation((1.0, 2.5), D)
    assert CDFStringQuantilesTransformer("s").make_transformation({"s_quantiles": ["a", "b"]}) == \
        CDFStringQuantilesTransformation(("a", "b"))
    h = StringHistogramTransformer("b", S)
    assert h.make_transformation({"b_histogram": list(DEFAULT_HISTOGRAM)}).is_default
    assert h.make_transformation({}) == StringHistogramTransformation(DEFAULT_HISTOGRAM)
    assert h.make_transformation({"b_histogram": ["a", "k"]}) == StringHistogramTransformation(("a", "k"))
    assert EmptyTransformer("x").make_transformation({}) == EmptyTransformation()
    with pytest.raises(InvalidOptionError, match="x_quantiles"):
        q.make_transformation({"x_quantiles": [1.0]})


def test_make_transformer_defaults_and_types():
    assert make_transformer("a", None, I) == LinearTransformer("a", I)
    assert make_transformer("a", None, S) == HashTransformer("a", S)
    assert make_transformer("a", "HASHING", I) == HashTransformer("a", I)
    assert make_transformer("a", "quantiles", TS) == CDFNumericQuantilesTransformer("a", TS)
    assert make_transformer("a", "quantiles", S) == CDFStringQuantilesTransformer("a")
    assert make_transformer("a", "Histogram", S) == StringHistogramTransformer("a", S)
    with pytest.raises(InvalidOptionError, match="'a'.*linear.*hashing, quantiles, histogram"):
        make_transformer("a", "linear", S)
    with pytest.raises(InvalidOptionError, match="only for string"):
        make_transformer("a", "histogram", I)
    with pytest.raises(InvalidOptionError, match="linear, hashing, quantiles, histogram"):
        make_transformer("a", "zorder", I)


def test_parse_columns_to_index():
    assert parse_columns_to_index("a,b:linear,c:HASHING, d:Quantiles") == [
        ColumnSpec("a"), ColumnSpec("b", "linear"), ColumnSpec("c", "hashing"), ColumnSpec("d", "quantiles")]
    assert parse_columns_to_index(["x", "y:histogram"]) == [ColumnSpec("x"), ColumnSpec("y", "histogram")]


@pytest.mark.parametrize(
    "spec,match",
    [
        ("a:hash", "'hash'.*linear, hashing, quantiles, histogram"),
        ("a:quantile", "'quantile'"),
        ("a,,b", "empty"),
        ("", "empty"),
        ([], "empty"),
        ("a:b:c", "malformed"),
        ("a:", "malformed"),
        (":linear", "malformed"),
        ("a,a:linear", "more than once"),
        (5, "comma-separated"),
        ([1], "comma-separated"),
    ],
)
def test_parse_columns_to_index_errors(spec, match):
    with pytest.raises(InvalidOptionError, match=match):
        parse_columns_to_index(spec)


def test_parse_column_stats():
    ts = [LinearTransformer("a", I), LinearTransformer("t", TS), LinearTransformer("d", DT),
          CDFNumericQuantilesTransformer("q", D), StringHistogramTransformer("h", S), HashTransformer("s", S)]
    text = json.dumps({"a_min": 1, "a_max": 5, "t_min": "1970-01-01 00:00:01.500000Z", "t_max": "1970-01-02 00:00:00",
                       "d_min": "1970-01-03", "q_quantiles": [0, 1.5, 3], "h_histogram": ["a", "m"], "d_max": None})
    parsed = parse_column_stats(text, ts)
    assert parsed == {"a_min": 1, "a_max": 5, "t_min": 1500, "t_max": 86_400_000, "d_min": 2 * 86_400_000,
                      "q_quantiles": [0.0, 1.5, 3.0], "h_histogram": ["a", "m"]}
    assert parse_column_stats({"a_min": 2}, ts) == {"a_min": 2}
    assert parse_column_stats(None, ts) == {} and parse_column_stats("", ts) == {}


@pytest.mark.parametrize(
    "stats,match",
    [
        ('{"a_min": 1.5}', "'a_min'.*integer"),
        ('{"a_min": "1"}', "'a_min'.*number"),
        ('{"a_mn": 1}', "'a_mn'.*a_min, a_max"),
        ('{"s_min": "a"}', "'s_min'"),
        ('{"t_min": "yesterday"}', "'t_min'"),
        ('{"t_min": 5}', "'t_min'.*string"),
        ('{"q_quantiles": [1]}', "'q_quantiles'.*at least 2"),
        ('{"q_quantiles": ["x", "y"]}', "'q_quantiles'"),
        ('{"h_histogram": [1, 2]}', "'h_histogram'.*strings"),
        ('{"a_min": 1', "columnStats is not valid JSON"),
        ('[1]', "columnStats must be a JSON object"),
        ('{"a_min": 3000000000}', "range"),
    ],
)
def test_parse_column_stats_errors(stats, match):
    ts = [LinearTransformer("a", I), LinearTransformer("t", TS), CDFNumericQuantilesTransformer("q", D),
          StringHistogramTransformer("h", S), HashTransformer("s", S)]
    with pytest.raises(InvalidOptionError, match=match):
        parse_column_stats(stats, ts)
