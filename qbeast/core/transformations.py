"""Transformations: the fitted functions that map a column value to an index coordinate in [0, 1].

Each class reproduces one qbeast-spark transformation (FORMAT §3.1–3.6): its ``transform`` must give
the same double as the Scala code for the same value (readers prune files by comparing these
coordinates with the cube bounds written by the other implementation), its JSON must be what the
Scala Jackson mapper writes and accepts, and ``is_superseded_by``/``merge`` decide, exactly as in
Scala, when an append needs a new revision.

Values handed to ``transform``/``transform_many`` are canonical (see ``qbeast.core.types``):
Integer/Long -> int, Double/Float/Decimal -> float, String -> str, Date/Timestamp -> epoch millis.
``transform_many(values, nulls)`` is the column form used by the writer; it agrees bit for bit with
``transform`` on every element.
"""
from __future__ import annotations

import abc
import decimal
import math
import random as _random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from qbeast.core.jvm_compat import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    JavaFloat,
    JavaRandom,
    double_order_keys,
    double_to_int,
    double_to_long,
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
    to_float32,
    to_int32,
    to_int64,
    utf16_key,
)
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError

PACKAGE = "io.qbeast.core.transform."
DEFAULT_HISTOGRAM: tuple[str, ...] = tuple(chr(c) for c in range(ord("a"), ord("z") + 1))

__all__ = [
    "Transformation",
    "LinearTransformation",
    "IdentityTransformation",
    "EmptyTransformation",
    "HashTransformation",
    "CDFNumericQuantilesTransformation",
    "CDFStringQuantilesTransformation",
    "StringHistogramTransformation",
    "transformation_from_json_obj",
    "DEFAULT_HISTOGRAM",
]


def _null_mask(values: np.ndarray, nulls: np.ndarray | None) -> np.ndarray:
    """Combine the caller's null mask with ``None`` entries of object arrays."""
    n = len(values)
    mask = np.zeros(n, dtype=bool) if nulls is None else np.asarray(nulls, dtype=bool).copy()
    if mask.shape != (n,):
        raise ValueError(f"nulls mask has shape {mask.shape}, expected ({n},)")
    if values.dtype == object:
        mask |= np.asarray(values == None, dtype=bool)  # noqa: E711 - elementwise test for None
    return mask


class Transformation(abc.ABC):
    """Base class: a value -> [0, 1] function with Scala-compatible JSON and supersession rules."""

    class_name: ClassVar[str]

    @abc.abstractmethod
    def transform(self, value: Any) -> float:
        """The coordinate of one canonical value (``None`` = SQL null)."""

    @abc.abstractmethod
    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        """Coordinates of a column of canonical values; ``nulls`` marks SQL nulls."""

    @abc.abstractmethod
    def is_superseded_by(self, other: "Transformation") -> bool:
        """True when data fitted to ``other`` does not fit this transformation (a new revision is due)."""

    @abc.abstractmethod
    def merge(self, other: "Transformation", rng: _random.Random | None = None) -> "Transformation":
        """The transformation of the next revision when ``other`` supersedes this one.

        ``rng`` draws the null value of a widened Linear (tests pass a seeded one).
        """

    @abc.abstractmethod
    def to_json_obj(self) -> dict[str, Any]:
        """The JSON object qbeast-spark writes (``className`` first); floats marked for Java printing."""

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "Transformation":
        """Decode the JSON object of this class (see :func:`transformation_from_json_obj`)."""
        raise NotImplementedError(f"{cls.__name__} has no JSON form")

    def to_json(self) -> str:
        """Compact JSON text exactly as Jackson prints it."""
        return jackson_json(self.to_json_obj())

    @property
    def is_empty(self) -> bool:
        """Only ``EmptyTransformation`` (staging / missing stats) is empty."""
        return False


# --------------------------------------------------------------------------------------------
# number typing shared by Linear and Identity (FORMAT §3.1 serializer/deserializer)
# --------------------------------------------------------------------------------------------


def _json_number(value: Any, data_type: QDataType) -> Any:
    """The JSON value Jackson writes for a canonical number of ``data_type``."""
    if value is None:
        return None
    if data_type is QDataType.FLOAT:
        return JavaFloat(value)
    if data_type.is_floating:
        return float(value)
    return int(value)


def _read_number(obj: Mapping[str, Any], key: str, data_type: QDataType, owner: str) -> Any:
    """Read a typed number the way the Scala deserializer does; anything else is a FormatError."""
    raw = obj[key]
    if data_type is QDataType.INTEGER:
        if isinstance(raw, bool) or not isinstance(raw, int) or not INT32_MIN <= raw <= INT32_MAX:
            raise FormatError(f"{owner}.{key} must be a JSON integer in the int range for IntegerDataType, got {raw!r}")
        return raw
    if data_type.is_floating:
        if not isinstance(raw, float):
            raise FormatError(
                f"{owner}.{key} must be a JSON floating-point number (with '.' or exponent) "
                f"for {data_type.value}, got {raw!r}"
            )
        return to_float32(raw) if data_type is QDataType.FLOAT else raw
    if data_type in (QDataType.LONG, QDataType.TIMESTAMP, QDataType.DATE):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise FormatError(f"{owner}.{key} must be a JSON number for {data_type.value}, got {raw!r}")
        if isinstance(raw, float):
            return double_to_long(raw)
        if not INT64_MIN <= raw <= INT64_MAX:
            raise FormatError(f"{owner}.{key} {raw} is outside the long range for {data_type.value}")
        return raw
    raise FormatError(f"{owner} cannot hold {data_type.value} values; it needs an ordered data type")


def _as_double(value: Any) -> float:
    return float(value)


def _check_ordered(data_type: QDataType, owner: str) -> None:
    if not data_type.is_ordered:
        raise FormatError(f"{owner} needs an ordered data type, got {data_type.value}")


def _random_between(mn: Any, mx: Any, data_type: QDataType, r: float) -> Any:
    """``LinearTransformation.generateRandomNumber``: min + r·(max − min) in the column's JVM type.

    Bit-exact, including the JVM's ``int``/``long`` overflow of ``max − min`` on very wide
    ranges: this is what regenerates the null value of old JSON (FORMAT §3.1).
    """
    if data_type is QDataType.INTEGER:
        return to_int32(mn + double_to_int(r * to_int32(mx - mn)))
    if data_type in (QDataType.LONG, QDataType.TIMESTAMP, QDataType.DATE):
        return to_int64(mn + double_to_long(r * to_int64(mx - mn)))
    if data_type is QDataType.FLOAT:
        return to_float32(to_float32(mn) + to_float32(r * to_float32(mx - mn)))
    return mn + r * (mx - mn)


def _fresh_null_value(mn: Any, mx: Any, data_type: QDataType, r: float) -> Any:
    """A new random null value in [min, max] (no overflow: only its range matters, not its bits)."""
    if data_type.is_integral:
        return min(mx, mn + int(r * (mx - mn)))
    value = mn + r * (mx - mn)
    if data_type is QDataType.FLOAT:
        value = to_float32(value)
    return min(max(value, mn), mx)


def _data_type_field(obj: Mapping[str, Any], key: str, owner: str) -> QDataType:
    if key not in obj:
        raise FormatError(f"{owner} JSON lacks the field {key!r}")
    return QDataType.from_json_name(obj[key])


# --------------------------------------------------------------------------------------------
# Linear
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearTransformation(Transformation):
    """``(v − min) / (max − min)`` with nulls mapped to a fixed random ``null_value`` (FORMAT §3.1)."""

    min_number: Any
    max_number: Any
    null_value: Any
    data_type: QDataType

    class_name: ClassVar[str] = PACKAGE + "LinearTransformation"

    def __post_init__(self) -> None:
        _check_ordered(self.data_type, "LinearTransformation")
        if not float(self.max_number) > float(self.min_number):
            raise InvalidOptionError(
                f"a linear transformation needs max > min, got min={self.min_number!r}, max={self.max_number!r}"
            )

    @classmethod
    def create(cls, min_number: Any, max_number: Any, data_type: QDataType,
               rng: _random.Random | None = None) -> "LinearTransformation":
        """A new transformation with a uniformly random ``null_value`` in [min, max], as Scala does."""
        r = (rng or _random).random()
        return cls(min_number, max_number, _fresh_null_value(min_number, max_number, data_type, r), data_type)

    @property
    def _mn(self) -> float:
        return _as_double(self.min_number)

    @property
    def _scale(self) -> float:
        return 1.0 / (_as_double(self.max_number) - self._mn)

    def transform(self, value: Any) -> float:
        v = self.null_value if value is None else value
        return (_as_double(v) - self._mn) * self._scale

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        values = np.asarray(values)
        mask = _null_mask(values, nulls)
        if values.dtype == object:
            filled = np.where(mask, self.null_value, values)
            nums = np.array([float(v) for v in filled], dtype=np.float64)
        else:
            nums = values.astype(np.float64)
            nums[mask] = _as_double(self.null_value)
        return (nums - self._mn) * self._scale

    def is_superseded_by(self, other: Transformation) -> bool:
        if isinstance(other, LinearTransformation) and other.data_type is self.data_type:
            return float(other.min_number) < float(self.min_number) or float(other.max_number) > float(self.max_number)
        if isinstance(other, IdentityTransformation) and other.data_type is self.data_type:
            v = other.identity_value
            return v is not None and (float(v) < float(self.min_number) or float(v) > float(self.max_number))
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        if isinstance(other, LinearTransformation) and other.data_type is self.data_type:
            lo = _min_of(self.min_number, other.min_number)
            hi = _max_of(self.max_number, other.max_number)
            return LinearTransformation.create(lo, hi, self.data_type, rng)
        if isinstance(other, IdentityTransformation) and other.data_type is self.data_type:
            v = other.identity_value
            if v is None or float(self.min_number) <= float(v) <= float(self.max_number):
                return self
            return LinearTransformation.create(_min_of(self.min_number, v), _max_of(self.max_number, v),
                                               self.data_type, rng)
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def with_headroom(self, previous_min: Any, previous_max: Any, factor: float,
                      rng: _random.Random | None = None) -> "LinearTransformation":
        """This range widened by ``factor`` times its span on each side where it grew past
        ``[previous_min, previous_max]`` (the range of the revision it supersedes).

        Why: data that grows in one direction (dates, ids) would otherwise open a new revision
        on every append, and every revision is a separate index a sample must read. With the span
        multiplied by ``1 + factor`` at each growth, ``k`` revisions cover a growth by
        ``(1 + factor)**k``: O(log growth) revisions. Bounds stay within the column type's range
        and keep its JSON number typing (integers for integral types, FORMAT §4.1).
        """
        if factor <= 0:
            return self
        lo, hi = float(self.min_number), float(self.max_number)
        pad = (hi - lo) * factor
        grew_low = lo < float(previous_min)
        grew_high = hi > float(previous_max)
        if not (grew_low or grew_high):
            return self
        low_limit, high_limit = _type_limits(self.data_type)
        new_lo = max(lo - pad, low_limit) if grew_low else lo
        new_hi = min(hi + pad, high_limit) if grew_high else hi
        if self.data_type.is_integral:
            mn = self.min_number if not grew_low else int(math.floor(new_lo))
            mx = self.max_number if not grew_high else int(math.ceil(new_hi))
            mn, mx = max(mn, int(low_limit)), min(mx, int(high_limit))
        else:
            mn = self.min_number if not grew_low else float(new_lo)
            mx = self.max_number if not grew_high else float(new_hi)
            if self.data_type is QDataType.FLOAT:
                mn, mx = to_float32(mn), to_float32(mx)
        if (mn, mx) == (self.min_number, self.max_number):
            return self
        return LinearTransformation.create(mn, mx, self.data_type, rng)

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "className": self.class_name,
            "minNumber": _json_number(self.min_number, self.data_type),
            "maxNumber": _json_number(self.max_number, self.data_type),
            "nullValue": _json_number(self.null_value, self.data_type),
            "orderedDataType": self.data_type.value,
        }

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "LinearTransformation":
        owner = "LinearTransformation"
        data_type = _data_type_field(obj, "orderedDataType", owner)
        _check_ordered(data_type, owner)
        for key in ("minNumber", "maxNumber"):
            if key not in obj:
                raise FormatError(f"{owner} JSON lacks the field {key!r}")
        mn = _read_number(obj, "minNumber", data_type, owner)
        mx = _read_number(obj, "maxNumber", data_type, owner)
        if "nullValue" in obj:
            null_value = _read_number(obj, "nullValue", data_type, owner)
        else:
            # Old tables: regenerate deterministically from the JSON without className (§3.1).
            tree = {k: v for k, v in obj.items() if k != "className"}
            seed = scala_string_hash(jackson_json(tree))
            null_value = _random_between(mn, mx, data_type, JavaRandom(seed).next_double())
        try:
            return cls(mn, mx, null_value, data_type)
        except InvalidOptionError as exc:
            raise FormatError(f"{owner} JSON is invalid: {exc}") from exc


#: Largest finite float32 (FloatDataType bounds stay representable).
_FLOAT32_MAX = 3.4028234663852886e38


def _type_limits(data_type: QDataType) -> tuple[float, float]:
    """The values a bound of ``data_type`` may take (the type's range; finite for floats)."""
    if data_type is QDataType.INTEGER:
        return -2.0**31, 2.0**31 - 1
    if data_type.is_integral:  # long, timestamp and date millis
        return -2.0**63, 2.0**63 - 1024  # the largest double below 2**63
    if data_type is QDataType.FLOAT:
        return -_FLOAT32_MAX, _FLOAT32_MAX
    return -sys.float_info.max, sys.float_info.max


def _min_of(a: Any, b: Any) -> Any:
    return b if float(b) < float(a) else a


def _max_of(a: Any, b: Any) -> Any:
    return b if float(b) > float(a) else a


# --------------------------------------------------------------------------------------------
# Identity and its deprecated predecessors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityTransformation(Transformation):
    """A column with a single value (or only nulls): every row maps to 0.0 (FORMAT §3.2).

    ``data_type`` is ``None`` only transiently, for the deprecated JSON forms that did not store
    it; ``Revision`` fills it from the column transformer.
    """

    identity_value: Any
    data_type: QDataType | None

    class_name: ClassVar[str] = PACKAGE + "IdentityTransformation"
    DEPRECATED_CLASS_NAMES: ClassVar[tuple[str, ...]] = (
        PACKAGE + "IdentityToZeroTransformation",
        PACKAGE + "NullToZeroTransformation",
        PACKAGE + "NullToZeroTransformation$",
    )

    def transform(self, value: Any) -> float:
        return 0.0

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(len(values), dtype=np.float64)

    def with_data_type(self, data_type: QDataType) -> "IdentityTransformation":
        """Attach the data type a deprecated JSON form did not carry."""
        return IdentityTransformation(self.identity_value, data_type)

    def is_superseded_by(self, other: Transformation) -> bool:
        if isinstance(other, IdentityTransformation) and other.data_type is self.data_type:
            v = other.identity_value
            return v is not None and (self.identity_value is None or float(v) != float(self.identity_value))
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        if isinstance(other, IdentityTransformation) and other.data_type is self.data_type:
            a, b = self.identity_value, other.identity_value
            if a is None:
                return other
            if b is None or float(a) == float(b):
                return self
            if self.data_type is None:
                raise FormatError("IdentityTransformation has no data type; read it through its Revision")
            return LinearTransformation.create(_min_of(a, b), _max_of(a, b), self.data_type, rng)
        if isinstance(other, LinearTransformation) and other.data_type is self.data_type:
            return other.merge(self, rng)
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def to_json_obj(self) -> dict[str, Any]:
        if self.data_type is None:
            raise FormatError("IdentityTransformation has no data type; read it through its Revision")
        return {
            "className": self.class_name,
            "identityValue": _json_number(self.identity_value, self.data_type),
            "orderedDataType": self.data_type.value,
        }

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "IdentityTransformation":
        owner = "IdentityTransformation"
        name = obj.get("className")
        if name in (PACKAGE + "NullToZeroTransformation", PACKAGE + "NullToZeroTransformation$"):
            return cls(None, None)
        value = obj.get("identityValue")
        if name == PACKAGE + "IdentityToZeroTransformation":
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise FormatError(f"IdentityToZeroTransformation.identityValue must be a number, got {value!r}")
            return cls(value, None)
        data_type = _data_type_field(obj, "orderedDataType", owner)
        _check_ordered(data_type, owner)
        if value is None:
            return cls(None, data_type)
        return cls(_read_number(obj, "identityValue", data_type, owner), data_type)


# --------------------------------------------------------------------------------------------
# Empty (staging, or stats not yet available)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmptyTransformation(Transformation):
    """Placeholder of the staging revision (and of quantiles without stats): maps to 0.0."""

    class_name: ClassVar[str] = PACKAGE + "EmptyTransformation"

    def transform(self, value: Any) -> float:
        return 0.0

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(len(values), dtype=np.float64)

    def is_superseded_by(self, other: Transformation) -> bool:
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        return other

    @property
    def is_empty(self) -> bool:
        return True

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "EmptyTransformation":
        return cls()


# --------------------------------------------------------------------------------------------
# Hash
# --------------------------------------------------------------------------------------------


def java_to_string(value: Any) -> str:
    """``String.valueOf`` of a canonical value as the JVM would print the boxed object.

    ``np.float32`` (a Spark Float) prints with ``Float.toString``, Python floats with
    ``Double.toString``, ``decimal.Decimal`` with ``BigDecimal.toString``.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (np.float32, JavaFloat)):
        return java_float_to_string(float(value))
    if isinstance(value, (float, np.floating)):
        return java_double_to_string(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int):
            raise InvalidOptionError(f"decimal value {value!r} is not finite")
        unscaled = int("".join(map(str, digits)) or "0")
        return java_bigdecimal_to_string(-unscaled if sign else unscaled, -exponent)
    raise InvalidOptionError(f"cannot derive the JVM string of {type(value).__name__} value {value!r}")


def _hash_coordinate(h: int) -> float:
    return (h & 0x7FFFFFFF) / 2147483647.0


@dataclass(frozen=True)
class HashTransformation(Transformation):
    """Scala 2.12 murmur of the value's bytes, scaled to [0, 1] (FORMAT §3.4)."""

    null_value: Any

    class_name: ClassVar[str] = PACKAGE + "HashTransformation"

    @classmethod
    def create(cls, rng: _random.Random | None = None) -> "HashTransformation":
        """A new transformation; like Scala, nulls hash as a random int chosen now."""
        return cls((rng or _random).randint(INT32_MIN, INT32_MAX))

    def _bytes(self, value: Any) -> bytes:
        v = self.null_value if value is None else value
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        return java_to_string(v).encode("utf-8", "surrogatepass")

    def transform(self, value: Any) -> float:
        return _hash_coordinate(scala212_bytes_hash(self._bytes(value)))

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        values = np.asarray(values)
        mask = _null_mask(values, nulls)
        n = len(values)
        if values.dtype.kind in "iu" and values.dtype.itemsize <= 8:
            # Decimal text of every integer at C speed; no integer text contains a NUL byte.
            text = values.astype("S21")
            raw = text.view(np.uint8).reshape(n, 21)
            lengths = (raw != 0).sum(axis=1)
            flat = raw[raw != 0]
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            hashes = scala212_bytes_hash_many(flat, offsets)
        else:
            # Strings, floats, decimals: encode each distinct value once.
            uniq, inverse = _unique_objects(values, mask)
            encoded = [u.encode("utf-8", "surrogatepass") if type(u) is str else self._bytes(u) for u in uniq]
            lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            hashes = scala212_bytes_hash_many(b"".join(encoded), offsets)[inverse] if len(uniq) else np.zeros(0, np.int32)
        out = (hashes.astype(np.int64) & 0x7FFFFFFF) / 2147483647.0
        if mask.any():
            out[mask] = self.transform(None)
        return out

    def is_superseded_by(self, other: Transformation) -> bool:
        return not isinstance(other, (HashTransformation, EmptyTransformation))

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        return self if isinstance(other, EmptyTransformation) else other

    def to_json_obj(self) -> dict[str, Any]:
        nv = self.null_value
        return {"className": self.class_name, "nullValue": float(nv) if isinstance(nv, float) else nv}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "HashTransformation":
        if "nullValue" not in obj:
            raise FormatError("HashTransformation JSON lacks the field 'nullValue'")
        nv = obj["nullValue"]
        if nv is None or isinstance(nv, (bool, list, dict)):
            raise FormatError(f"HashTransformation.nullValue must be a number or string, got {nv!r}")
        return cls(nv)


def _unique_objects(values: np.ndarray, mask: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Distinct non-null values and, per row, the index of its value (nulls point at 0).

    Distinctness must follow the JVM text, so floats are told apart by bit pattern (-0.0 is not
    0.0) and decimals by their digits and scale (1.0 is not 1.00).
    """
    inverse = np.zeros(len(values), dtype=np.int64)
    keep = ~mask
    if values.dtype.kind == "f" and values.dtype.itemsize in (4, 8):
        uint = np.uint32 if values.dtype.itemsize == 4 else np.uint64
        bits, inv = np.unique(values[keep].view(uint), return_inverse=True)
        inverse[keep] = inv.ravel()
        return list(bits.view(values.dtype)), inverse
    if values.dtype.kind == "U":
        u, inv = np.unique(values[keep], return_inverse=True)
        inverse[keep] = inv.ravel()
        return [str(x) for x in u], inverse
    if values.dtype == object and keep.any():
        strings = _as_unicode_array(values[keep])
        if strings is not None:
            u, inv = np.unique(strings, return_inverse=True)
            inverse[keep] = inv.ravel()
            return [str(x) for x in u], inverse
    index: dict[Any, int] = {}
    uniq: list[Any] = []
    for i, v in enumerate(values.tolist() if values.dtype != object else values):
        if mask[i]:
            continue
        key = (type(v), repr(v)) if isinstance(v, (float, decimal.Decimal, np.floating)) else (type(v), v)
        pos = index.get(key)
        if pos is None:
            pos = index[key] = len(uniq)
            uniq.append(v)
        inverse[i] = pos
    return uniq, inverse


def _as_unicode_array(values: np.ndarray) -> np.ndarray | None:
    """The object array as a numpy unicode array when that loses nothing, else None.

    numpy's fixed-width strings drop trailing NUL characters, so the conversion is only used
    when every element is a ``str`` and every length survives.
    """
    if set(map(type, values)) != {str}:
        return None
    converted = values.astype(np.str_)
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    if not np.array_equal(np.char.str_len(converted), lengths):
        return None
    return converted


# --------------------------------------------------------------------------------------------
# Quantiles and histograms (binary search over sorted boundaries)
# --------------------------------------------------------------------------------------------


def _check_quantiles(values: Sequence[Any], owner: str, field_name: str) -> None:
    if len(values) < 2:
        raise FormatError(f"{owner}.{field_name} needs at least 2 entries, got {len(values)}")


def _string_ranks(strings: Sequence[str]) -> dict[str, int]:
    """Dense ranks in Java ``String.compareTo`` order (UTF-16 code units)."""
    ordered = sorted(set(strings), key=utf16_key)
    return {s: i for i, s in enumerate(ordered)}


def _position_to_coordinate(found: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """Found(i) -> i/(n−1); InsertionPoint(0) -> 0; InsertionPoint(p) -> (p−1)/(n−1)."""
    denom = float(n - 1)
    return np.where(found, index / denom, np.where(index == 0, 0.0, (index - 1) / denom))


class _StringSearchTransformation(Transformation):
    """Shared by string quantiles and histograms: binary search over string boundaries.

    Found(i) -> i/(n−1); InsertionPoint(0) -> 0; InsertionPoint(p) -> (p−1)/(n−1), comparing with
    Java's ``String.compareTo``. Subclasses say what a null becomes (``_null_text``; None = 0.0).
    """

    _null_text: ClassVar[str | None] = None

    @property
    @abc.abstractmethod
    def boundaries(self) -> tuple[str, ...]:
        """The sorted strings searched (quantiles or histogram)."""

    def transform(self, value: Any) -> float:
        if value is None:
            if self._null_text is None:
                return 0.0
            value = self._null_text
        found, i = scala_binary_search(self.boundaries, java_to_string(value), _string_compare)
        n = len(self.boundaries)
        if found:
            return i / (n - 1)
        return 0.0 if i == 0 else (i - 1) / (n - 1)

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        values = np.asarray(values)
        mask = _null_mask(values, nulls)
        uniq, inverse = _unique_objects(values, mask)
        texts = [u if type(u) is str else java_to_string(u) for u in uniq]
        found, index = _search_strings(self.boundaries, texts)
        out = _position_to_coordinate(found, index, len(self.boundaries))[inverse] if texts else np.zeros(len(values))
        if mask.any():
            out[mask] = self.transform(None)
        return out


def _search_strings(boundaries: Sequence[str], texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Vector binary search of ``texts`` in ``boundaries`` under Java's ``String.compareTo``.

    When no string holds a character at or above U+D800, UTF-16 order equals code point order
    and numpy's own string comparisons are used; otherwise every string is ranked by its UTF-16
    key first and the search runs on the ranks.
    """
    keys = _as_unicode_array(np.array(texts, dtype=object))
    seq = _as_unicode_array(np.array(list(boundaries), dtype=object))
    if keys is not None and seq is not None and _below_surrogates(keys) and _below_surrogates(seq):
        return scala_binary_search_many(seq, keys)
    ranks = _string_ranks(list(boundaries) + texts)
    seq_keys = np.array([ranks[b] for b in boundaries], dtype=np.int64)
    text_keys = np.array([ranks[t] for t in texts], dtype=np.int64)
    return scala_binary_search_many(seq_keys, text_keys)


def _below_surrogates(strings: np.ndarray) -> bool:
    """True when every character is below U+D800 (where UTF-16 and code point orders agree)."""
    return strings.size == 0 or int(strings.view(np.uint32).max(initial=0)) < 0xD800


def _string_compare(a: str, b: str) -> int:
    ka, kb = utf16_key(a), utf16_key(b)
    return (ka > kb) - (ka < kb)


@dataclass(frozen=True)
class CDFNumericQuantilesTransformation(Transformation):
    """Empirical CDF through numeric quantiles with linear interpolation (FORMAT §3.5)."""

    quantiles: tuple[float, ...]
    data_type: QDataType

    class_name: ClassVar[str] = PACKAGE + "CDFNumericQuantilesTransformation"

    def __post_init__(self) -> None:
        _check_ordered(self.data_type, "CDFNumericQuantilesTransformation")
        _check_quantiles(self.quantiles, "CDFNumericQuantilesTransformation", "quantiles")

    def transform(self, value: Any) -> float:
        if value is None:
            return 0.0
        q = self.quantiles
        n = len(q)
        x = float(value)
        found, i = scala_binary_search(q, x, java_double_compare)
        if found:
            return i / (n - 1)
        if i == 0:
            return 0.0
        if i == n:
            return 1.0
        k = i - 1
        return (k + (x - q[k]) / (q[k + 1] - q[k])) / (n - 1)

    def transform_many(self, values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
        values = np.asarray(values)
        mask = _null_mask(values, nulls)
        if values.dtype == object:
            x = np.array([0.0 if m else float(v) for v, m in zip(values, mask)], dtype=np.float64)
        else:
            x = values.astype(np.float64)
        q = np.array(self.quantiles, dtype=np.float64)
        n = len(q)
        found, index = scala_binary_search_many(double_order_keys(q), double_order_keys(x))
        k = np.clip(index - 1, 0, n - 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = (k + (x - q[k]) / (q[k + 1] - q[k])) / (n - 1)
        out = np.where(found, index / float(n - 1),
                       np.where(index == 0, 0.0, np.where(index == n, 1.0, inner)))
        out[mask] = 0.0
        return out

    def is_superseded_by(self, other: Transformation) -> bool:
        if isinstance(other, CDFNumericQuantilesTransformation) and other.data_type is self.data_type:
            return len(other.quantiles) > 0 and tuple(other.quantiles) != tuple(self.quantiles)
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        return self if isinstance(other, EmptyTransformation) else other

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "quantiles": [float(v) for v in self.quantiles],
                "dataType": self.data_type.value}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "CDFNumericQuantilesTransformation":
        owner = "CDFNumericQuantilesTransformation"
        data_type = _data_type_field(obj, "dataType", owner)
        raw = obj.get("quantiles")
        if not isinstance(raw, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in raw):
            raise FormatError(f"{owner}.quantiles must be an array of numbers, got {raw!r}")
        return cls(tuple(float(v) for v in raw), data_type)


@dataclass(frozen=True)
class CDFStringQuantilesTransformation(_StringSearchTransformation):
    """Empirical CDF through string quantiles, without interpolation (FORMAT §3.5)."""

    quantiles: tuple[str, ...]

    class_name: ClassVar[str] = PACKAGE + "CDFStringQuantilesTransformation"

    def __post_init__(self) -> None:
        _check_quantiles(self.quantiles, "CDFStringQuantilesTransformation", "quantiles")

    @property
    def boundaries(self) -> tuple[str, ...]:
        return tuple(self.quantiles)

    def is_superseded_by(self, other: Transformation) -> bool:
        if isinstance(other, CDFStringQuantilesTransformation):
            return len(other.quantiles) > 0 and tuple(other.quantiles) != tuple(self.quantiles)
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        return self if isinstance(other, EmptyTransformation) else other

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "quantiles": list(self.quantiles)}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "CDFStringQuantilesTransformation":
        raw = obj.get("quantiles")
        if not isinstance(raw, list) or any(not isinstance(v, str) for v in raw):
            raise FormatError(f"CDFStringQuantilesTransformation.quantiles must be an array of strings, got {raw!r}")
        return cls(tuple(raw))


@dataclass(frozen=True)
class StringHistogramTransformation(_StringSearchTransformation):
    """Deprecated string binning by histogram boundaries; nulls are the string "null" (FORMAT §3.6)."""

    histogram: tuple[str, ...] = field(default=DEFAULT_HISTOGRAM)

    class_name: ClassVar[str] = PACKAGE + "StringHistogramTransformation"
    _null_text: ClassVar[str | None] = "null"

    def __post_init__(self) -> None:
        _check_quantiles(self.histogram, "StringHistogramTransformation", "histogram")

    @property
    def is_default(self) -> bool:
        """True for the built-in "a".."z" histogram used when no columnStats histogram is given."""
        return tuple(self.histogram) == DEFAULT_HISTOGRAM

    @property
    def boundaries(self) -> tuple[str, ...]:
        return tuple(self.histogram)

    def is_superseded_by(self, other: Transformation) -> bool:
        if isinstance(other, StringHistogramTransformation):
            if self.is_default:
                return not other.is_default
            if other.is_default:
                return False
            return tuple(other.histogram) != tuple(self.histogram)
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: _random.Random | None = None) -> Transformation:
        return self if isinstance(other, EmptyTransformation) else other

    def to_json_obj(self) -> dict[str, Any]:
        return {"className": self.class_name, "histogram": list(self.histogram)}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> "StringHistogramTransformation":
        raw = obj.get("histogram")
        if not isinstance(raw, list) or any(not isinstance(v, str) for v in raw):
            raise FormatError(f"StringHistogramTransformation.histogram must be an array of strings, got {raw!r}")
        return cls(tuple(raw))


# --------------------------------------------------------------------------------------------
# polymorphic JSON
# --------------------------------------------------------------------------------------------

_BY_CLASS_NAME: dict[str, type[Transformation]] = {
    LinearTransformation.class_name: LinearTransformation,
    IdentityTransformation.class_name: IdentityTransformation,
    EmptyTransformation.class_name: EmptyTransformation,
    HashTransformation.class_name: HashTransformation,
    CDFNumericQuantilesTransformation.class_name: CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation.class_name: CDFStringQuantilesTransformation,
    StringHistogramTransformation.class_name: StringHistogramTransformation,
    **{name: IdentityTransformation for name in IdentityTransformation.DEPRECATED_CLASS_NAMES},
}


def transformation_from_json_obj(obj: Any) -> Transformation:
    """Decode one transformation object by its ``className``; unknown names are a FormatError."""
    if not isinstance(obj, dict):
        raise FormatError(f"a transformation must be a JSON object, got {obj!r}")
    name = obj.get("className")
    cls = _BY_CLASS_NAME.get(name)  # type: ignore[arg-type]
    if cls is None:
        raise FormatError(
            f"unknown transformation className {name!r}; expected one of {', '.join(sorted(_BY_CLASS_NAME))}"
        )
    return cls.from_json_obj(obj)
