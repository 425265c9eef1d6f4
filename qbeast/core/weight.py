"""Row weights and normalized weights (FORMAT §2.2, §2.3).

A row weight is a signed 32-bit integer (Spark's ``hash()`` of the indexed columns). Sampling a
fraction ``f`` keeps rows whose weight is strictly below ``Weight(f)``; cube thresholds are stored as
weights too. The conversions must reproduce the JVM bit for bit, because thresholds written by
qbeast-spark are compared with weights computed here: ``Weight(f)`` is the double
``f * range + offset`` converted with Scala's ``Double.toInt`` (truncation toward zero, saturation
at the Int bounds, NaN -> 0).

A *normalized weight* (NW) is a double: below 1 it is the fraction of a cube's domain kept in the
cube (an inner cube), at or above 1 the cube is a leaf.
"""
from __future__ import annotations

import numpy as np

from qbeast.core.jvm_compat import double_to_int
from qbeast.errors import InvalidOptionError

MIN_WEIGHT: int = -(2**31)
MAX_WEIGHT: int = 2**31 - 1

# The two doubles qbeast-spark uses for the affine map between weights and fractions.
WEIGHT_OFFSET: float = -2147483648.0
WEIGHT_RANGE: float = 4294967295.0


def weight_from_fraction(f: float) -> int:
    """``Weight(f)``: the weight threshold below which a fraction ``f`` of uniform weights falls."""
    return double_to_int(float(f) * WEIGHT_RANGE + WEIGHT_OFFSET)


def fraction(weight: int) -> float:
    """The fraction of the weight space below ``weight``: ``(w + 2^31) / (2^32 - 1)`` in [0, 1]."""
    check_weight(weight, "weight")
    return (float(weight) - WEIGHT_OFFSET) / WEIGHT_RANGE


def normalized_to_weight(nw: float) -> int:
    """Threshold of a cube with normalized weight ``nw``; leaves (``nw >= 1``) keep every weight."""
    return weight_from_fraction(nw) if nw < 1.0 else MAX_WEIGHT


def normalized_weight_from_counts(desired_cube_size: int, element_count: int) -> float:
    """NW of a cube that is not full: how many times its content fits in the desired cube size.

    A result >= 1 marks a leaf. A zero element count has no defined ratio; qbeast-spark would divide
    by zero, here it is a clear error.
    """
    if element_count <= 0:
        raise InvalidOptionError(
            f"element_count must be > 0 to compute a normalized weight, got {element_count}"
        )
    return desired_cube_size / element_count


def check_weight(weight: int, what: str) -> int:
    """Return ``weight`` if it is an int in the Int32 range, else raise naming ``what``."""
    if isinstance(weight, bool) or not isinstance(weight, (int, np.integer)):
        raise InvalidOptionError(f"{what} must be an integer weight, got {weight!r}")
    if not MIN_WEIGHT <= int(weight) <= MAX_WEIGHT:
        raise InvalidOptionError(
            f"{what} must lie in [{MIN_WEIGHT}, {MAX_WEIGHT}], got {weight}"
        )
    return int(weight)


def weights_from_fractions(fractions_: np.ndarray) -> np.ndarray:
    """Vectorized ``weight_from_fraction``; returns int64 values within the Int32 range."""
    values = np.asarray(fractions_, dtype=np.float64) * WEIGHT_RANGE + WEIGHT_OFFSET
    out = np.trunc(np.nan_to_num(values, nan=0.0, posinf=MAX_WEIGHT, neginf=MIN_WEIGHT))
    return np.clip(out, MIN_WEIGHT, MAX_WEIGHT).astype(np.int64)


def fractions(weights: np.ndarray) -> np.ndarray:
    """Vectorized ``fraction`` (float64)."""
    w = np.asarray(weights)
    if w.size and (w.min() < MIN_WEIGHT or w.max() > MAX_WEIGHT):
        raise InvalidOptionError(f"weights must lie in [{MIN_WEIGHT}, {MAX_WEIGHT}]")
    return (w.astype(np.float64) - WEIGHT_OFFSET) / WEIGHT_RANGE


def normalized_to_weights(nws: np.ndarray) -> np.ndarray:
    """Vectorized ``normalized_to_weight`` (int64)."""
    nw = np.asarray(nws, dtype=np.float64)
    return np.where(nw < 1.0, weights_from_fractions(np.minimum(nw, 1.0)), MAX_WEIGHT).astype(
        np.int64
    )
