"""Transformations (FORMAT §3.1–3.6): coordinates, JSON, supersession and merge."""
from __future__ import annotations

import decimal
import json
import random

import numpy as np
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
    java_to_string,
    transformation_from_json_obj,
)
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError

D, I, L, F = QDataType.DOUBLE, QDataType.INTEGER, QDataType.LONG, QDataType.FLOAT
P = "io.qbeast.core.transform."


def _parse(text: str):
    return transformation_from_json_obj(json.loads(text))


def _same_bits(a: np.ndarray, b: list[float]) -> bool:
    return np.array_equal(np.asarray(a, dtype=np.float64).view(np.int64), np.array(b, dtype=np.float64).view(np.int64))


# ----------------------------------------------------------------------------- Hash


@pytest.mark.parametrize(
    "value,expected",
    [("a", 0.9137243399926109), ("hello world", 0.9264939017251571), ("123", 0.5320517670046779),
     (123, 0.5320517670046779), ("", 0.2647087761502288)],
)
def test_hash_worked_examples(value, expected):
    assert HashTransformation(-1628776639).transform(value) == expected


def test_hash_null_uses_the_null_value_text():
    t = HashTransformation(-1628776639)
    assert t.transform(None) == t.transform("-1628776639")
    assert HashTransformation("null").transform(None) == t.transform("null")


def test_hash_of_numbers_uses_java_to_string():
    t = HashTransformation(0)
    assert t.transform(1e10) == t.transform("1.0E10")
    assert t.transform(np.float32(0.1)) == t.transform("0.1")
    assert t.transform(0.1) == t.transform("0.1")
    assert t.transform(decimal.Decimal("1.50")) == t.transform("1.50")
    assert java_to_string(decimal.Decimal("1E+3")) == "1E+3"


def test_hash_transform_many_is_bit_identical():
    t = HashTransformation(-5)
    rng = random.Random(1)
    strings = ["", "a", "é", "\U0001f600x", "hello world", "x" * 70] + [
        "".join(rng.choice("abcé€😀") for _ in range(rng.randint(0, 12))) for _ in range(300)
    ]
    values = np.array(strings + [None], dtype=object)
    nulls = np.zeros(len(values), dtype=bool)
    nulls[3] = True
    expected = [t.transform(None if (v is None or nulls[i]) else v) for i, v in enumerate(values)]
    assert _same_bits(t.transform_many(values, nulls), expected)
    ints = np.array([0, -1, 123, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 42], dtype=np.int64)
    assert _same_bits(t.transform_many(ints), [t.transform(int(v)) for v in ints])
    assert _same_bits(t.transform_many(ints.astype(np.int32)[:5]), [t.transform(int(v)) for v in ints[:5]])
    doubles = np.array([0.0, -0.0, 1e10, 0.1, 1.5, 2e23, np.nan])
    assert _same_bits(t.transform_many(doubles), [t.transform(float(v)) for v in doubles])
    floats = doubles.astype(np.float32)
    assert _same_bits(t.transform_many(floats), [t.transform(v) for v in floats])
    decimals = np.array([decimal.Decimal("1.0"), decimal.Decimal("1.00"), None], dtype=object)
    assert _same_bits(t.transform_many(decimals), [t.transform(decimals[0]), t.transform(decimals[1]), t.transform(None)])


def test_hash_is_roughly_uniform():
    # FORMAT §11: 10 buckets within 10 % of each other's expectation.
    t = HashTransformation(0)
    coords = t.transform_many(np.array([f"user-{i}" for i in range(100_000)], dtype=object))
    counts = np.bincount(np.minimum((coords * 10).astype(int), 9), minlength=10)
    assert np.all(np.abs(counts - 10_000) < 1_000)


def test_hash_json():
    text = f'{{"className":"{P}HashTransformation","nullValue":-1628776639}}'
    t = _parse(text)
    assert t == HashTransformation(-1628776639)
    assert t.to_json() == text
    assert _parse(f'{{"className":"{P}HashTransformation","nullValue":"null"}}').to_json().endswith('"null"}')
    with pytest.raises(FormatError, match="nullValue"):
        _parse(f'{{"className":"{P}HashTransformation"}}')


def test_hash_create_draws_an_int():
    t = HashTransformation.create(random.Random(4))
    assert isinstance(t.null_value, int) and -(2**31) <= t.null_value < 2**31


# ----------------------------------------------------------------------------- Linear


def test_linear_transform_is_exact_and_not_clamped():
    t = LinearTransformation(0, 10, 5, I)
    assert t.transform(5) == 0.5
    assert t.transform(None) == 0.5
    assert t.transform(20) == 2.0
    assert t.transform(-10) == -1.0
    d = LinearTransformation(0.1, 2574.07, 3.0, D)
    assert d.transform(7.3) == (7.3 - 0.1) * (1.0 / (2574.07 - 0.1))


def test_linear_transform_many_is_bit_identical():
    rng = random.Random(2)
    t = LinearTransformation(-3.7, 1234.5678, 100.25, D)
    values = np.array([rng.uniform(-10, 2000) for _ in range(1000)])
    nulls = np.array([rng.random() < 0.1 for _ in range(1000)])
    expected = [t.transform(None if n else float(v)) for v, n in zip(values, nulls)]
    assert _same_bits(t.transform_many(values, nulls), expected)
    lt = LinearTransformation(-(2**62), 2**62, 7, L)
    longs = np.array([rng.randint(-(2**62), 2**62) for _ in range(500)], dtype=np.int64)
    assert _same_bits(lt.transform_many(longs), [lt.transform(int(v)) for v in longs])
    obj = np.array([1, None, 3], dtype=object)
    it = LinearTransformation(0, 10, 7, I)
    # (v - min) * (1 / (max - min)): a product with the scale, not a division (7 * 0.1 != 0.7)
    assert _same_bits(it.transform_many(obj), [1 * (1.0 / 10), 7 * (1.0 / 10), 3 * (1.0 / 10)])


@pytest.mark.parametrize(
    "text",
    [
        f'{{"className":"{P}LinearTransformation","minNumber":0.0,"maxNumber":10.0,"nullValue":5.0,"orderedDataType":"DoubleDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":0,"maxNumber":10,"nullValue":5,"orderedDataType":"IntegerDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":-5,"maxNumber":1700000000000,"nullValue":3,"orderedDataType":"TimestampDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":0,"maxNumber":86400000,"nullValue":0,"orderedDataType":"DateDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":1.0E-5,"maxNumber":1.0E10,"nullValue":2.5,"orderedDataType":"DecimalDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":0.1,"maxNumber":3.4028235E38,"nullValue":1.0E10,"orderedDataType":"FloatDataType"}}',
        f'{{"className":"{P}LinearTransformation","minNumber":-9223372036854775808,"maxNumber":9223372036854775807,"nullValue":0,"orderedDataType":"LongDataType"}}',
    ],
)
def test_linear_json_round_trips_byte_for_byte(text):
    assert _parse(text).to_json() == text


def test_linear_json_number_typing():
    assert LinearTransformation(0.0, 10.0, 5.0, D).to_json() == (
        f'{{"className":"{P}LinearTransformation","minNumber":0.0,"maxNumber":10.0,"nullValue":5.0,'
        '"orderedDataType":"DoubleDataType"}'
    )
    # an int-valued Decimal/Double bound is still written as a floating literal
    assert '"minNumber":0.0' in LinearTransformation(0, 10, 5, QDataType.DECIMAL).to_json()
    assert '"minNumber":0,' in LinearTransformation(0, 10, 5, L).to_json()
    # Long/Timestamp/Date accept any JSON number (doubles truncate like Jackson's longValue)
    t = _parse(f'{{"className":"{P}LinearTransformation","minNumber":1.9,"maxNumber":10,"nullValue":5,"orderedDataType":"LongDataType"}}')
    assert t.min_number == 1 and isinstance(t.min_number, int)
    # Float values are floats: read back rounded to float32
    f = _parse(f'{{"className":"{P}LinearTransformation","minNumber":0.1,"maxNumber":1.0,"nullValue":0.5,"orderedDataType":"FloatDataType"}}')
    assert f.min_number == float(np.float32(0.1))


@pytest.mark.parametrize(
    "fields,match",
    [
        ('"minNumber":0,"maxNumber":10.0,"nullValue":5.0,"orderedDataType":"DoubleDataType"', "minNumber"),
        ('"minNumber":0.0,"maxNumber":10,"nullValue":5,"orderedDataType":"IntegerDataType"', "minNumber"),
        ('"minNumber":0,"maxNumber":3000000000,"nullValue":5,"orderedDataType":"IntegerDataType"', "maxNumber"),
        ('"minNumber":0,"maxNumber":10,"nullValue":"x","orderedDataType":"LongDataType"', "nullValue"),
        ('"minNumber":0,"maxNumber":10,"nullValue":null,"orderedDataType":"LongDataType"', "nullValue"),
        ('"minNumber":0,"nullValue":5,"orderedDataType":"IntegerDataType"', "maxNumber"),
        ('"minNumber":0,"maxNumber":10,"nullValue":5', "orderedDataType"),
        ('"minNumber":0,"maxNumber":10,"nullValue":5,"orderedDataType":"StringDataType"', "ordered"),
        ('"minNumber":0,"maxNumber":10,"nullValue":5,"orderedDataType":"ShortDataType"', "ShortDataType"),
        ('"minNumber":10,"maxNumber":10,"nullValue":10,"orderedDataType":"IntegerDataType"', "max > min"),
    ],
)
def test_linear_json_errors(fields, match):
    with pytest.raises(FormatError, match=match):
        _parse(f'{{"className":"{P}LinearTransformation",{fields}}}')


def test_old_linear_json_regenerates_null_value_7():
    # FORMAT §3.1 / JSONSerializationTests: seed = stringHash of the JSON without className.
    old = f'{{"className":"{P}LinearTransformation","minNumber":0,"maxNumber":10,"orderedDataType":"IntegerDataType"}}'
    t = _parse(old)
    assert t.null_value == 7
    assert _parse(old).null_value == 7  # deterministic
    assert t.to_json() == (
        f'{{"className":"{P}LinearTransformation","minNumber":0,"maxNumber":10,"nullValue":7,'
        '"orderedDataType":"IntegerDataType"}'
    )


def test_create_draws_null_value_inside_the_range():
    rng = random.Random(9)
    for _ in range(200):
        t = LinearTransformation.create(-2_000_000_000, 2_000_000_000, I, rng)
        assert isinstance(t.null_value, int) and -2_000_000_000 <= t.null_value <= 2_000_000_000
        d = LinearTransformation.create(1.5, 2.5, D, rng)
        assert 1.5 <= d.null_value <= 2.5


# ----------------------------------------------------------------------------- Linear / Identity matrices


def test_linear_supersession_matrix():
    t = LinearTransformation(0, 10, 5, I)
    assert t.is_superseded_by(LinearTransformation(-1, 10, 0, I))
    assert t.is_superseded_by(LinearTransformation(0, 11, 0, I))
    assert not t.is_superseded_by(LinearTransformation(0, 10, 3, I))
    assert not t.is_superseded_by(LinearTransformation(2, 8, 3, I))
    assert not t.is_superseded_by(IdentityTransformation(10, I))
    assert t.is_superseded_by(IdentityTransformation(11, I))
    assert not t.is_superseded_by(IdentityTransformation(None, I))
    assert not t.is_superseded_by(EmptyTransformation())
    assert t.is_superseded_by(HashTransformation(1))
    assert t.is_superseded_by(LinearTransformation(0, 10, 5, L))  # other type: always
    assert t.is_superseded_by(CDFNumericQuantilesTransformation((1.0, 2.0), I))


def test_linear_merge_matrix():
    rng = random.Random(0)
    t = LinearTransformation(0, 10, 5, I)
    merged = t.merge(LinearTransformation(-5, 3, 0, I), rng)
    assert (merged.min_number, merged.max_number, merged.data_type) == (-5, 10, I)
    widened = t.merge(IdentityTransformation(20, I), rng)
    assert (widened.min_number, widened.max_number) == (0, 20) and 0 <= widened.null_value <= 20
    assert t.merge(EmptyTransformation()) is t
    h = HashTransformation(1)
    assert t.merge(h) is h


def test_identity_supersession_and_merge_matrix():
    rng = random.Random(0)
    t = IdentityTransformation(5, I)
    assert t.transform(123) == 0.0 and t.transform(None) == 0.0
    assert not t.is_superseded_by(IdentityTransformation(5, I))
    assert t.is_superseded_by(IdentityTransformation(6, I))
    assert not t.is_superseded_by(IdentityTransformation(None, I))
    assert IdentityTransformation(None, I).is_superseded_by(IdentityTransformation(1, I))
    assert t.is_superseded_by(LinearTransformation(0, 10, 1, I))
    assert t.is_superseded_by(HashTransformation(0))
    assert not t.is_superseded_by(EmptyTransformation())
    linear = t.merge(IdentityTransformation(2, I), rng)
    assert isinstance(linear, LinearTransformation) and (linear.min_number, linear.max_number) == (2, 5)
    wide = t.merge(LinearTransformation(6, 9, 7, I), rng)
    assert (wide.min_number, wide.max_number) == (5, 9)
    inside = LinearTransformation(0, 9, 7, I)
    assert t.merge(inside) is inside
    assert t.merge(EmptyTransformation()) is t
    new = IdentityTransformation(3, I)
    assert IdentityTransformation(None, I).merge(new) is new


def test_identity_json_and_deprecated_forms():
    text = f'{{"className":"{P}IdentityTransformation","identityValue":0,"orderedDataType":"IntegerDataType"}}'
    assert _parse(text) == IdentityTransformation(0, I) and _parse(text).to_json() == text
    null_text = f'{{"className":"{P}IdentityTransformation","identityValue":null,"orderedDataType":"DateDataType"}}'
    assert _parse(null_text).to_json() == null_text
    with pytest.raises(FormatError, match="identityValue"):
        _parse(f'{{"className":"{P}IdentityTransformation","identityValue":1,"orderedDataType":"DoubleDataType"}}')
    old = _parse(f'{{"className":"{P}IdentityToZeroTransformation","identityValue":42}}')
    assert old == IdentityTransformation(42, None)
    assert old.with_data_type(L).to_json() == (
        f'{{"className":"{P}IdentityTransformation","identityValue":42,"orderedDataType":"LongDataType"}}'
    )
    assert _parse(f'{{"className":"{P}NullToZeroTransformation$"}}') == IdentityTransformation(None, None)
    with pytest.raises(FormatError, match="Revision"):
        old.to_json()


# ----------------------------------------------------------------------------- Empty


def test_empty():
    e = EmptyTransformation()
    assert e.to_json() == f'{{"className":"{P}EmptyTransformation"}}'
    assert _parse(e.to_json()) == e
    assert e.transform("x") == 0.0 and e.transform_many(np.array([1, 2])).tolist() == [0.0, 0.0]
    h = HashTransformation(1)
    assert e.is_superseded_by(h) and not e.is_superseded_by(EmptyTransformation())
    assert e.merge(h) is h


def test_hash_supersession_and_merge_matrix():
    h = HashTransformation(1)
    assert not h.is_superseded_by(HashTransformation(2))
    assert not h.is_superseded_by(EmptyTransformation())
    linear = LinearTransformation(0, 1, 0, I)
    assert h.is_superseded_by(linear) and h.merge(linear) is linear
    assert h.merge(EmptyTransformation()) is h


# ----------------------------------------------------------------------------- CDF quantiles


def test_cdf_numeric_transform():
    t = CDFNumericQuantilesTransformation((1.0, 2.0, 3.0), I)
    assert [t.transform(v) for v in (1, 2, 3, 0, 4, None)] == [0.0, 0.5, 1.0, 0.0, 1.0, 0.0]
    assert t.transform(1.5) == 0.25
    assert t.transform(2.25) == (1 + (2.25 - 2.0) / (3.0 - 2.0)) / 2
    dup = CDFNumericQuantilesTransformation((1.0, 2.0, 2.0, 2.0, 3.0), D)
    assert dup.transform(2.0) == 0.5  # Found(2) by Scala's midpoint rule
    z = CDFNumericQuantilesTransformation((0.0, 1.0), D)
    assert z.transform(-0.0) == 0.0 and z.transform(float("nan")) == 1.0


def test_cdf_numeric_transform_many_is_bit_identical():
    rng = random.Random(8)
    q = tuple(sorted(rng.choice([0.0, 1.0, 1.0, 2.5, 7.0, 7.0, 7.0, 10.0]) for _ in range(9)))
    if len(set(q)) < 2:
        q = (0.0, 10.0)
    t = CDFNumericQuantilesTransformation(q, D)
    values = np.array([rng.choice([-1.0, 0.0, 1.0, 2.5, 7.0, 10.0, 11.0, rng.uniform(-1, 11)]) for _ in range(2000)])
    nulls = np.array([rng.random() < 0.05 for _ in range(2000)])
    expected = [t.transform(None if n else float(v)) for v, n in zip(values, nulls)]
    assert _same_bits(t.transform_many(values, nulls), expected)


def test_cdf_string_transform():
    t = CDFStringQuantilesTransformation(("a", "b", "c"))
    assert [t.transform(v) for v in ("a", "b", "c", "bb", "0", "d", None)] == [0.0, 0.5, 1.0, 0.5, 0.0, 1.0, 0.0]
    # Java String order: the emoji (surrogates D83D..) sorts before U+FFFD
    j = CDFStringQuantilesTransformation(("a", "\U0001f600", "\ufffd"))
    assert j.transform("\U0001f600") == 0.5
    assert j.transform("\ue000") == 0.5  # between the surrogate pair and U+FFFD: InsertionPoint(2)
    values = np.array(["a", "bb", None, "zz", "\U0001f600", "b", "b\x00"], dtype=object)
    assert _same_bits(t.transform_many(values), [t.transform(v) for v in values])
    assert _same_bits(j.transform_many(values), [j.transform(v) for v in values])
    bmp = np.array(["a", "bb", "zz", "", "b"], dtype=object)  # numpy-comparison path
    assert _same_bits(t.transform_many(bmp), [t.transform(v) for v in bmp])


def test_cdf_supersession_and_merge():
    a = CDFNumericQuantilesTransformation((1.0, 2.0), D)
    assert not a.is_superseded_by(CDFNumericQuantilesTransformation((1.0, 2.0), D))
    assert a.is_superseded_by(CDFNumericQuantilesTransformation((1.0, 3.0), D))
    assert a.is_superseded_by(CDFNumericQuantilesTransformation((1.0, 2.0), L))
    assert not a.is_superseded_by(EmptyTransformation())
    assert a.is_superseded_by(LinearTransformation(0, 1, 0, I))
    b = CDFNumericQuantilesTransformation((0.0, 2.0), D)
    assert a.merge(b) is b and a.merge(EmptyTransformation()) is a
    s = CDFStringQuantilesTransformation(("a", "b"))
    assert not s.is_superseded_by(CDFStringQuantilesTransformation(("a", "b")))
    assert s.is_superseded_by(CDFStringQuantilesTransformation(("a", "c")))
    assert s.is_superseded_by(HashTransformation(0))


def test_cdf_json():
    num = f'{{"className":"{P}CDFNumericQuantilesTransformation","quantiles":[1.0,2.0,3.0],"dataType":"IntegerDataType"}}'
    assert _parse(num) == CDFNumericQuantilesTransformation((1.0, 2.0, 3.0), I) and _parse(num).to_json() == num
    ints = f'{{"className":"{P}CDFNumericQuantilesTransformation","quantiles":[1,2],"dataType":"LongDataType"}}'
    assert _parse(ints).to_json() == ints.replace("[1,2]", "[1.0,2.0]")
    st = f'{{"className":"{P}CDFStringQuantilesTransformation","quantiles":["a","b","c"]}}'
    assert _parse(st).to_json() == st
    with pytest.raises(FormatError, match="at least 2"):
        _parse(f'{{"className":"{P}CDFStringQuantilesTransformation","quantiles":["a"]}}')
    with pytest.raises(FormatError, match="strings"):
        _parse(f'{{"className":"{P}CDFStringQuantilesTransformation","quantiles":[1,2]}}')
    with pytest.raises(FormatError, match="numbers"):
        _parse(f'{{"className":"{P}CDFNumericQuantilesTransformation","quantiles":["a","b"],"dataType":"LongDataType"}}')


# ----------------------------------------------------------------------------- StringHistogram


def test_histogram_transform():
    t = StringHistogramTransformation(DEFAULT_HISTOGRAM)
    assert t.is_default and len(DEFAULT_HISTOGRAM) == 26
    assert t.transform("n") == 13 / 25
    assert t.transform("nike") == 13 / 25  # InsertionPoint(14) -> (14 - 1) / 25
    assert t.transform("Apple") == 0.0
    assert t.transform("zz") == 1.0
    assert t.transform(None) == t.transform("null")
    values = np.array(["nike", None, "adidas", "", "zara", "ñ"], dtype=object)
    nulls = np.array([False, False, True, False, False, False])
    expected = [t.transform(None if (v is None or n) else v) for v, n in zip(values, nulls)]
    assert _same_bits(t.transform_many(values, nulls), expected)


def test_histogram_supersession_matrix():
    default = StringHistogramTransformation(DEFAULT_HISTOGRAM)
    custom = StringHistogramTransformation(("a", "m", "z"))
    other = StringHistogramTransformation(("b", "n"))
    assert not default.is_superseded_by(StringHistogramTransformation(DEFAULT_HISTOGRAM))
    assert default.is_superseded_by(custom)
    assert not custom.is_superseded_by(default)
    assert custom.is_superseded_by(other)
    assert not custom.is_superseded_by(StringHistogramTransformation(("a", "m", "z")))
    assert not custom.is_superseded_by(EmptyTransformation())
    assert default.merge(custom) is custom and custom.merge(EmptyTransformation()) is custom


def test_histogram_json_from_real_table():
    text = (f'{{"className":"{P}StringHistogramTransformation","histogram":'
            + json.dumps(list(DEFAULT_HISTOGRAM), separators=(",", ":")) + "}")
    assert _parse(text).is_default and _parse(text).to_json() == text


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize(
    "obj,match",
    [({"className": "io.qbeast.core.transform.FooTransformation"}, "FooTransformation"),
     ({"minNumber": 1}, "None"), ([1, 2], "object")],
)
def test_unknown_or_malformed_transformations(obj, match):
    with pytest.raises(FormatError, match=match):
        transformation_from_json_obj(obj)


def test_linear_requires_max_above_min():
    with pytest.raises(InvalidOptionError, match="max > min"):
        LinearTransformation(5, 5, 5, I)
