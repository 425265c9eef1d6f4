"""JVM / Scala 2.12 emulations, checked against outputs printed by a real Java 17 JVM.

Every expected value below was produced by OpenJDK 17 (``Double.toString``, ``Float.toString``,
``java.util.Random``, ``BigDecimal.toString``, ``String.compareTo``) or is a value FORMAT §3
reports as verified against scala-library 2.12.18; none is computed by the code under test.
"""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from qbeast.core.jvm_compat import (
    JavaFloat,
    JavaRandom,
    double_order_keys,
    jackson_json,
    java_bigdecimal_to_string,
    java_double_compare,
    java_double_to_string,
    java_float_to_string,
    scala212_bytes_hash,
    scala212_bytes_hash_many,
    scala_binary_search,
    scala_binary_search_many,
    scala_string_hash,
    to_int32,
    utf16_key,
)

# (raw IEEE bits, Java 17 Double.toString) — includes the cases where Java 17 is not the
# shortest representation (2e23, 8.41e21, 2.82879384806159E17, 4.9E-324) and the F/E switch.
JAVA_DOUBLES = [
    ("3f50624dd2f1a9fc", "0.001"),
    ("3f50624dd2f1a9fb", "9.999999999999998E-4"),
    ("416312d000000000", "1.0E7"),
    ("416312cfffffffff", "9999999.999999998"),
    ("3f1a36e2eb1c432d", "1.0E-4"),
    ("4059000000000000", "100.0"),
    ("4132d68700000000", "1234567.0"),
    ("41678c29c0000000", "1.2345678E7"),
    ("3fd3333333333334", "0.30000000000000004"),
    ("8000000000000000", "-0.0"),
    ("0000000000000000", "0.0"),
    ("444b1ae4d6e2ef50", "1.0E21"),
    ("419d6f3454000000", "1.23456789E8"),
    ("40a41c23d70a3d71", "2574.07"),
    ("4095c5fd691db64c", "1393.4974712984576"),
    ("0000000000000001", "4.9E-324"),
    ("44c52d02c7e14af6", "1.9999999999999998E23"),
    ("438f67ea69ed3795", "2.82879384806159008E17"),
    ("447c7e83209e90b2", "8.409999999999999E21"),
    ("4202a05f20000000", "1.0E10"),
    ("bff8000000000000", "-1.5"),
    ("3eff75104d551d69", "3.0E-5"),
    ("7fefffffffffffff", "1.7976931348623157E308"),
    ("0010000000000000", "2.2250738585072014E-308"),
    ("4330000000000000", "4.503599627370496E15"),
    ("4340000000000000", "9.007199254740992E15"),
    ("3fd5555555555555", "0.3333333333333333"),
    ("43d4f2247a5cdbed", "6.0372357323402578E18"),
    ("c384a2f300573971", "-1.85877251221827104E17"),
    ("43a5b9a5b7983758", "7.8273227671966003E17"),
    ("7ff0000000000000", "Infinity"),
    ("fff0000000000000", "-Infinity"),
    ("7ff8000000000000", "NaN"),
]

JAVA_FLOATS = [
    ("3dcccccd", "0.1"),
    ("501502f9", "1.0E10"),
    ("7f7fffff", "3.4028235E38"),
    ("00000001", "1.4E-45"),
    ("4b800000", "1.6777216E7"),
    ("3727c5ac", "1.0E-5"),
    ("3a83126f", "0.001"),
    ("4b18967f", "9999999.0"),
    ("4b189680", "1.0E7"),
    ("4c000001", "3.3554436E7"),
    ("c0200000", "-2.5"),
    ("00800000", "1.17549435E-38"),
    ("42f6e979", "123.456"),
    ("3eaaaaab", "0.33333334"),
]


def _double(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def _float(bits: str) -> float:
    return float(np.frombuffer(bytes.fromhex(bits)[::-1], dtype=np.float32)[0])


@pytest.mark.parametrize("bits,expected", JAVA_DOUBLES)
def test_double_to_string_matches_java17(bits, expected):
    assert java_double_to_string(_double(bits)) == expected


@pytest.mark.parametrize("bits,expected", JAVA_FLOATS)
def test_float_to_string_matches_java17(bits, expected):
    assert java_float_to_string(_float(bits)) == expected


def test_double_to_string_always_reads_back_to_the_same_double():
    # Whatever digits Java chooses, they must denote the original double (property over 20k values).
    rng = random.Random(3)
    for _ in range(20000):
        d = struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0]
        if d != d or d in (float("inf"), float("-inf")):
            continue
        text = java_double_to_string(d)
        assert float(text) == d
        assert "." in text  # Java always prints a decimal point


# java.util.Random(seed): nextDouble, nextInt(), nextInt(1000), nextInt(1 << 20), nextLong()
JAVA_RANDOM = [
    (-398672889, 0.7708405040306471, 106718459, 320, 1026978, 3557627400087420782),
    (0, 0.730967787376657, 1033096058, 447, 668380, 5700976833288827063),
    (42, 0.7275636800328681, -1360544799, 884, 323715, -1068554554583376509),
    (-1, 0.26894263088050496, 52699159, 439, 694245, -7364023878800395366),
    (123456789012, 0.013835938433091277, -2041770304, 691, 397387, 4575438820379692626),
    (-(2**63), 0.730967787376657, 1033096058, 447, 668380, 5700976833288827063),
]


@pytest.mark.parametrize("seed,d,i,i1000,i2p20,lng", JAVA_RANDOM)
def test_java_random_sequence(seed, d, i, i1000, i2p20, lng):
    r = JavaRandom(seed)
    assert r.next_double() == d
    assert r.next_int() == i
    assert r.next_int(1000) == i1000
    assert r.next_int(1 << 20) == i2p20
    assert r.next_long() == lng


def test_java_random_rejects_non_positive_bound():
    with pytest.raises(ValueError, match="bound"):
        JavaRandom(1).next_int(0)


def test_scala212_bytes_hash_is_the_per_byte_variant():
    # FORMAT §3.4: scala-library 2.12.18 bytesHash("a".getBytes) = -185275570 (mmh3 gives -1188936396).
    assert scala212_bytes_hash(b"a") == -185275570


def test_scala_string_hash_of_the_old_linear_json():
    # FORMAT §3.1: the seed that regenerates the null value of a Linear without nullValue.
    text = '{"minNumber":0,"maxNumber":10,"orderedDataType":"IntegerDataType"}'
    assert scala_string_hash(text) == -398672889


def test_bytes_hash_many_agrees_with_scalar_on_mixed_lengths():
    rng = random.Random(11)
    items = [bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 2, 3, 7, 40]))) for _ in range(500)]
    items += [b"", b"\x00", b"\xff\x80", "h\u00e9llo \U0001f600".encode()]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in items])])
    got = scala212_bytes_hash_many(b"".join(items), offsets)
    assert got.dtype == np.int32
    assert got.tolist() == [scala212_bytes_hash(b) for b in items]


def test_bytes_hash_many_of_nothing():
    assert scala212_bytes_hash_many(b"", np.array([0])).tolist() == []


def test_to_int32_wraps_like_the_jvm():
    assert to_int32(2**31) == -(2**31)
    assert to_int32(-(2**31) - 1) == 2**31 - 1
    assert to_int32(4_000_000_000) == -294967296


@pytest.mark.parametrize(
    "unscaled,scale,expected",
    [(123, 0, "123"), (123, 2, "1.23"), (-123, 5, "-0.00123"), (1, -3, "1E+3"), (123, 10, "1.23E-8"),
     (0, 3, "0.000"), (0, -2, "0E+2"), (-1, 7, "-1E-7"), (1234567, 6, "1.234567"), (5, 1, "0.5")],
)
def test_bigdecimal_to_string_matches_java(unscaled, scale, expected):
    assert java_bigdecimal_to_string(unscaled, scale) == expected


def test_string_order_is_java_utf16_order():
    # Java: "\uD83D\uDE00".compareTo("\uFFFD") < 0, although U+1F600 > U+FFFD as code points.
    emoji, replacement = "\U0001f600", "\ufffd"
    assert emoji > replacement
    assert utf16_key(emoji) < utf16_key(replacement)
    assert utf16_key("a") < utf16_key("ab") < utf16_key("b")


def test_double_compare_orders_negative_zero_and_nan():
    nan = float("nan")
    assert java_double_compare(-0.0, 0.0) == -1
    assert java_double_compare(nan, float("inf")) == 1
    assert java_double_compare(nan, nan) == 0
    assert java_double_compare(1.0, 1.0) == 0
    values = np.array([nan, 3.0, -0.0, 0.0, -np.inf, -2.5, np.inf])
    order = np.argsort(double_order_keys(values), kind="stable")
    assert [repr(float(v)) for v in values[order]] == ["-inf", "-2.5", "-0.0", "0.0", "3.0", "inf", "nan"]


def _cmp(a, b):
    return (a > b) - (a < b)


@pytest.mark.parametrize(
    "seq,elem,expected",
    [
        ([1, 1, 1, 1], 1, (True, 1)),          # midpoint from + (to - from - 1) / 2 = 1
        ([1, 2, 2, 2, 3], 2, (True, 2)),
        ([0, 1, 1, 1, 1, 1, 1], 1, (True, 3)),
        ([0, 0, 0, 1, 1, 1, 1, 1], 1, (True, 3)),
        ([1, 3, 5], 4, (False, 2)),
        ([1, 3, 5], 0, (False, 0)),
        ([1, 3, 5], 9, (False, 3)),
        ([], 1, (False, 0)),
    ],
)
def test_scala_binary_search_semantics(seq, elem, expected):
    assert scala_binary_search(seq, elem, _cmp) == expected


def test_vector_binary_search_agrees_with_scalar():
    rng = random.Random(5)
    for size in (1, 2, 3, 8, 33):
        seq = sorted(rng.choice(range(10)) for _ in range(size))
        keys = [rng.choice(range(-1, 12)) for _ in range(200)]
        found, index = scala_binary_search_many(np.array(seq), np.array(keys))
        assert list(zip(found.tolist(), index.tolist())) == [scala_binary_search(seq, k, _cmp) for k in keys]


def test_jackson_json_prints_like_jackson():
    obj = {"i": 5, "d": 5.0, "big": 1e10, "f": JavaFloat(0.10000000149011612), "s": 'q"\\\n\x01é/', "n": None,
           "l": [True, False], "nan": float("nan")}
    assert jackson_json(obj) == (
        '{"i":5,"d":5.0,"big":1.0E10,"f":0.1,"s":"q\\"\\\\\\n\\u0001é/","n":null,"l":[true,false],"nan":"NaN"}'
    )
