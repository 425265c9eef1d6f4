"""Weight conversions must match the JVM bit for bit (FORMAT §2.2, §2.3)."""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core.weight import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    fraction,
    fractions,
    normalized_to_weight,
    normalized_to_weights,
    normalized_weight_from_counts,
    weight_from_fraction,
    weights_from_fractions,
)
from qbeast.errors import InvalidOptionError, QbeastError

# Values of FORMAT §2.2, checked there against real logs / the JVM.
FORMAT_WEIGHTS = [
    (0.0, -2147483648),
    (0.0625, -1879048192),
    (1 / 30, -2004318071),
    (0.1, -1717986918),
    (0.125, -1610612736),
    (0.3, -858993459),
    (0.5, 0),
    (0.99, 2104533974),
    (1.0, 2147483647),
    (0.01, -2104533975),  # FORMAT §7.5
]


@pytest.mark.parametrize("f, expected", FORMAT_WEIGHTS)
def test_weight_from_fraction_matches_format_examples(f, expected):
    assert weight_from_fraction(f) == expected


def test_weight_bounds():
    assert MIN_WEIGHT == -(2**31) and MAX_WEIGHT == 2**31 - 1


def test_fraction_example_and_ends():
    assert fraction(-858993459) == 0.3000000001164153
    assert fraction(MIN_WEIGHT) == 0.0
    assert fraction(MAX_WEIGHT) == 1.0


def test_truncation_is_toward_zero_not_floor():
    # Just below 0.5 the double is negative and non-integral: truncation goes up to the next int.
    f = 0.5 - 1e-12
    value = f * 4294967295.0 - 2147483648.0
    assert -1 < value < 0
    assert weight_from_fraction(f) == 0
    assert weight_from_fraction(0.5 + 1e-12) == 0


def test_saturation_and_nan():
    assert weight_from_fraction(2.0) == MAX_WEIGHT
    assert weight_from_fraction(-1.0) == MIN_WEIGHT
    assert weight_from_fraction(float("inf")) == MAX_WEIGHT
    assert weight_from_fraction(float("-inf")) == MIN_WEIGHT
    assert weight_from_fraction(float("nan")) == 0


def test_fraction_rejects_out_of_range_and_non_int():
    with pytest.raises(InvalidOptionError, match="weight"):
        fraction(MAX_WEIGHT + 1)
    with pytest.raises(QbeastError, match="integer"):
        fraction(1.5)
    with pytest.raises(InvalidOptionError):
        fraction(True)


def test_normalized_to_weight():
    assert normalized_to_weight(0.1) == -1717986918
    assert normalized_to_weight(0.9999) == weight_from_fraction(0.9999)
    assert normalized_to_weight(1.0) == MAX_WEIGHT
    assert normalized_to_weight(7.5) == MAX_WEIGHT


def test_normalized_weight_from_counts():
    assert normalized_weight_from_counts(10000, 2500) == 4.0
    assert normalized_weight_from_counts(100, 400) == 0.25
    with pytest.raises(InvalidOptionError, match="element_count"):
        normalized_weight_from_counts(100, 0)


def test_round_trip_weight_fraction_weight_is_stable():
    rng = np.random.default_rng(7)
    for w in rng.integers(MIN_WEIGHT, MAX_WEIGHT, size=2000, endpoint=True).tolist():
        # fraction() is not exactly invertible (the range is 2^32 - 1), but never off by more than 1.
        assert abs(weight_from_fraction(fraction(w)) - w) <= 1


def test_numpy_versions_equal_scalar_versions():
    rng = np.random.default_rng(11)
    fs = np.concatenate(
        [rng.random(3000), [0.0, 0.5, 1.0, -0.5, 1.5, np.nan, np.inf, -np.inf]]
        + [np.array([f for f, _ in FORMAT_WEIGHTS])]
    )
    got = weights_from_fractions(fs)
    assert got.dtype == np.int64
    assert got.tolist() == [weight_from_fraction(float(f)) for f in fs]

    ws = rng.integers(MIN_WEIGHT, MAX_WEIGHT, size=3000, endpoint=True)
    assert fractions(ws).tolist() == [fraction(int(w)) for w in ws]

    nws = np.concatenate([rng.random(1000) * 2, [1.0, 0.999999, np.nan]])
    assert normalized_to_weights(nws).tolist() == [normalized_to_weight(float(x)) for x in nws]


def test_numpy_fractions_rejects_out_of_range():
    with pytest.raises(InvalidOptionError):
        fractions(np.array([0, MAX_WEIGHT + 1]))
