"""Arrow columns -> transformation coordinates in the write tasks, against the core's scalar path."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa

from qbeast.core.revision import Revision
from qbeast.core.transformations import HashTransformation, LinearTransformation, java_to_string
from qbeast.core.transformers import make_transformer
from qbeast.core.types import QDataType
from qbeast.index.points import canonical_values, table_points

D = decimal.Decimal


def test_hashed_decimals_hash_their_jvm_text_with_scale():
    """Scala hashes BigDecimal.toString: 1.50 and 1.5 differ, tiny values print as 1E-10."""
    values = [D("1.50"), D("1.5"), None, D("-0.0000000001"), D("123456.7890"), D("1.50"), D("0E-10")]
    column = pa.array(values, pa.decimal128(20, 10)).cast(pa.decimal128(20, 10))
    # Arrow keeps the column's scale: every value carries 10 fraction digits, as Spark hands them
    scaled = column.to_pylist()
    hashing = HashTransformation(17)
    revision = Revision(1, 0, "t", 100, (make_transformer("d", "hashing", QDataType.DECIMAL),),
                        (hashing,))
    coords = table_points(revision, pa.table({"d": column}), ["d"])[:, 0]
    expected = [hashing.transform(v) for v in scaled]
    assert coords.tolist() == expected
    assert java_to_string(scaled[3]) == "-1E-10"  # BigDecimal.toString of a tiny value
    # the text really matters: a double of the same value hashes elsewhere
    assert hashing.transform(D("1.5000000000")) != hashing.transform(1.5)


def test_linear_decimals_stay_doubles():
    column = pa.array([D("1.10"), None, D("-3.05")], pa.decimal128(5, 2))
    values, nulls = canonical_values(column)
    assert values.dtype == np.float64 and values[[0, 2]].tolist() == [1.1, -3.05]
    assert nulls.tolist() == [False, True, False]
    linear = LinearTransformation.create(-5.0, 5.0, QDataType.DECIMAL)
    revision = Revision(1, 0, "t", 100, (make_transformer("d", "linear", QDataType.DECIMAL),),
                        (linear,))
    coords = table_points(revision, pa.table({"d": column}), ["d"])[:, 0]
    assert coords[[0, 2]].tolist() == [linear.transform(1.1), linear.transform(-3.05)]
