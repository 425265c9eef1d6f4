"""Exact emulations of the JVM / Scala 2.12 library behaviour the Qbeast format depends on.

qbeast-spark's on-disk metadata is produced by a handful of JVM routines whose output is baked
into tables: Scala 2.12's ``MurmurHash3`` (hash coordinates, the seed of regenerated null values),
``java.util.Random`` (regenerated null values), Java 17's ``Double.toString``/``Float.toString``
(hash input bytes of floating values and every floating number Jackson writes), ``BigDecimal``'s
``toString``, Jackson's compact JSON, and Scala's ``Searching.binarySearch`` (quantile and histogram
coordinates). Each is restated here from its published algorithm so that Python produces the same
bits; the scalar forms are the reference and the ``*_many`` forms are numpy versions that must
agree with them element for element.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_M32 = 0xFFFFFFFF
_M48 = (1 << 48) - 1
_M64 = (1 << 64) - 1


def to_int32(x: int) -> int:
    """Wrap an arbitrary Python int to a signed 32-bit value (JVM ``int`` overflow)."""
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


def to_int64(x: int) -> int:
    """Wrap an arbitrary Python int to a signed 64-bit value (JVM ``long`` overflow)."""
    x &= _M64
    return x - (1 << 64) if x & (1 << 63) else x


def double_to_int(d: float) -> int:
    """JVM ``(int) d``: truncation toward zero, NaN -> 0, saturating at the int range."""
    if math.isnan(d):
        return 0
    if d >= 2147483647.0:
        return 2147483647
    if d <= -2147483648.0:
        return -2147483648
    return int(d)


def double_to_long(d: float) -> int:
    """JVM ``(long) d``: truncation toward zero, NaN -> 0, saturating at the long range."""
    if math.isnan(d):
        return 0
    if d >= 9.223372036854775807e18:
        return (1 << 63) - 1
    if d <= -9.223372036854775808e18:
        return -(1 << 63)
    return int(d)


def to_float32(d: float) -> float:
    """Round a double to the nearest float (JVM ``(float) d``) and widen it back."""
    return float(np.float32(d))


# --------------------------------------------------------------------------------------------
# Scala 2.12 scala.util.hashing.MurmurHash3
# --------------------------------------------------------------------------------------------

SCALA_SEQ_SEED = 0x3C074A61  # MurmurHash3.seqSeed = "Seq".hashCode
SCALA_STRING_SEED = 0xF7CA7FD2  # MurmurHash3.stringSeed


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k(k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    k = _rotl32(k, 15)
    return (k * 0x1B873593) & _M32


def _mix(h: int, k: int) -> int:
    h = _rotl32(h ^ _mix_k(k & _M32), 13)
    return (h * 5 + 0xE6546B64) & _M32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _finalize(h: int, length: int) -> int:
    return to_int32(_fmix32((h ^ length) & _M32))


def scala212_bytes_hash(data: bytes) -> int:
    """Scala 2.12 ``MurmurHash3.bytesHash(data)`` (1-argument form).

    On 2.12 this is ``arrayHash`` with the ``Seq`` seed: every *signed* byte is mixed as a whole
    32-bit block — not the block-wise murmur3 of ``mmh3`` (FORMAT §3.4).
    """
    h = SCALA_SEQ_SEED
    for b in data:
        h = _mix(h, b - 256 if b >= 128 else b)
    return _finalize(h, len(data))


def scala212_bytes_hash_many(buffer: bytes | np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Vectorized ``scala212_bytes_hash`` of many byte strings stored back to back.

    ``buffer`` holds the concatenated bytes and ``offsets`` (length n + 1) the start of each
    string. Rows are processed by position: step ``j`` mixes byte ``j`` of every string longer
    than ``j`` (rows sorted by length so the active rows are a prefix), which costs O(total bytes)
    numpy work without padding every string to the longest one. Returns int32 hashes.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    flat = np.frombuffer(bytes(buffer), dtype=np.int8) if not isinstance(buffer, np.ndarray) else buffer.view(np.int8)
    lengths = np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    starts = offsets[:-1][order]
    sorted_len = lengths[order]
    h = np.full(n, SCALA_SEQ_SEED, dtype=np.uint32)
    max_len = int(sorted_len[0]) if n else 0
    # active[j] = number of rows longer than j (lengths sorted descending).
    active_counts = np.searchsorted(-sorted_len, -np.arange(max_len), side="left")
    with np.errstate(over="ignore"):
        for j in range(max_len):
            cnt = int(active_counts[j])
            k = flat[starts[:cnt] + j].astype(np.int32).view(np.uint32)
            k = k * np.uint32(0xCC9E2D51)
            k = (k << np.uint32(15)) | (k >> np.uint32(17))
            k = k * np.uint32(0x1B873593)
            x = h[:cnt] ^ k
            x = (x << np.uint32(13)) | (x >> np.uint32(19))
            h[:cnt] = x * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= sorted_len.astype(np.uint32)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    out = np.empty(n, dtype=np.int32)
    out[order] = h.view(np.int32)
    return out


def scala_string_hash(s: str) -> int:
    """Scala ``MurmurHash3.stringHash(s)``: UTF-16 code units mixed two at a time."""
    units = _utf16_units(s)
    h = SCALA_STRING_SEED
    i = 0
    n = len(units)
    while i + 1 < n:
        h = _mix(h, (units[i] << 16) + units[i + 1])
        i += 2
    if i < n:
        h = (h ^ _mix_k(units[i])) & _M32
    return _finalize(h, n)


def _utf16_units(s: str) -> list[int]:
    raw = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]


def utf16_key(s: str) -> bytes:
    """A bytes key whose lexicographic order is Java's ``String.compareTo`` (UTF-16 units)."""
    return s.encode("utf-16-be", "surrogatepass")


# --------------------------------------------------------------------------------------------
# java.util.Random
# --------------------------------------------------------------------------------------------


class JavaRandom:
    """``java.util.Random``: the 48-bit linear congruential generator, bit-exact."""

    _MULT = 0x5DEECE66D
    _ADD = 0xB

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self._MULT) & _M48

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * self._MULT + self._ADD) & _M48
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` (any int) or ``nextInt(bound)`` (uniform in [0, bound))."""
        if bound is None:
            return self._next(32)
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:
            return to_int32((bound * r) >> 31)
        u = r
        while True:
            r = u % bound
            if to_int32(u - r + m) >= 0:
                return r
            u = self._next(31)

    def next_long(self) -> int:
        """``nextLong()``."""
        return to_int64((self._next(32) << 32) + self._next(32))

    def next_double(self) -> float:
        """``nextDouble()``: 53 random bits scaled to [0, 1)."""
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))


# --------------------------------------------------------------------------------------------
# Java 17 Double.toString / Float.toString (sun.misc.FloatingDecimal, pre-JDK-19 algorithm)
# --------------------------------------------------------------------------------------------

_EXP_SHIFT = 52
_FRACT_HOB = 1 << _EXP_SHIFT
_SIGNIF_MASK = _FRACT_HOB - 1
_N_5_BITS = [0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49,
             52, 54, 56, 59, 61]
_LONG_5_POW_LEN = 27
_MAX_SMALL_BIN_EXP = 62
_MIN_SMALL_BIN_EXP = -(63 // 3)


def _insignificant_digits_for_pow2(p2: int) -> int:
    """floor(log10(2**p2)) for 1 < p2 < 64, else 0 (FloatingDecimal's lookup table)."""
    if 1 < p2 < 64:
        return len(str(1 << p2)) - 1
    return 0


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """FloatingDecimal's floor(log10(value)) estimate, computed in doubles as the JVM does."""
    d2 = struct.unpack(">d", struct.pack(">Q", 0x3FF0000000000000 | (fract_bits & _SIGNIF_MASK)))[0]
    d = (d2 - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(d)


def _n5bits(i: int) -> int:
    return _N_5_BITS[i] if i < len(_N_5_BITS) else i * 3


def _dtoa(bin_exp: int, fract_bits: int, n_significant_bits: int) -> tuple[list[int], int]:
    """Digits and decimal exponent exactly as Java 17's ``BinaryToASCIIBuffer.dtoa``.

    Returns ``(digits, dec_exponent)`` meaning 0.d1d2... x 10^dec_exponent. The quirks that make
    Java 17 output differ from the shortest representation (the symmetric stopping test, the
    power-of-two ``M2`` adjustment, the strict/non-strict ``high`` tests of the int/long versus big
    integer paths, the forced second digit in E-form, trailing zeros left by round-up) are kept.
    """
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = _EXP_SHIFT + 1 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if _MIN_SMALL_BIN_EXP <= bin_exp <= _MAX_SMALL_BIN_EXP and n_tiny_bits == 0:
        # An integer that fits in a long: print its digits, dropping insignificant low ones.
        insignificant = (
            _insignificant_digits_for_pow2(bin_exp - n_significant_bits - 1)
            if bin_exp > n_significant_bits else 0
        )
        if bin_exp >= _EXP_SHIFT:
            value = fract_bits << (bin_exp - _EXP_SHIFT)
        else:
            value = fract_bits >> (_EXP_SHIFT - bin_exp)
        return _develop_long_digits(value, insignificant)

    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant_bits
    fract_bits >>= tail_zeros
    b2 -= n_fract_bits - 1
    common2 = min(b2, s2)
    b2 -= common2
    s2 -= common2
    m2 -= common2
    if n_fract_bits == 1:
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0

    b_bits = n_fract_bits + b2 + _n5bits(b5)
    ten_s_bits = s2 + 1 + _n5bits(s5 + 1)
    if b_bits < 64 and ten_s_bits < 64:
        wrap = to_int32 if (b_bits < 32 and ten_s_bits < 32) else to_int64
        gen: _MachineDigits | _BigDigits = _MachineDigits(wrap, fract_bits * 5**b5 << b2, 5**s5 << s2, 5**m5 << m2)
    else:
        gen = _BigDigits(fract_bits * 5**b5 << b2, 5**s5 << s2, 5**m5 << m2)
    digits: list[int] = []
    q, low, high = gen.step(first=True)
    if q == 0 and not high:
        dec_exp -= 1  # the estimate was one too high: drop the leading zero
    else:
        digits.append(q)
    if dec_exp < -3 or dec_exp >= 8:
        high = low = False  # E-form always prints a second digit
    while not low and not high:
        q, low, high = gen.step(first=False)
        digits.append(q)
    low_digit_difference = gen.low_digit_difference(low, high)
    dec_exponent = dec_exp + 1
    if high:
        if low:
            if low_digit_difference == 0:
                if digits[-1] & 1:
                    dec_exponent = _roundup(digits, dec_exponent)
            elif low_digit_difference > 0:
                dec_exponent = _roundup(digits, dec_exponent)
        else:
            dec_exponent = _roundup(digits, dec_exponent)
    return digits, dec_exponent


class _MachineDigits:
    """Digit generation in JVM ``int``/``long`` arithmetic (wrapping), used when B and 10·S fit.

    ``high`` is the strict test ``b + m > 10·s``; ``m`` may overflow in the loop, which the JVM
    code treats as "both low and high".
    """

    def __init__(self, wrap: Callable[[int], int], b: int, s: int, m: int) -> None:
        self.wrap = wrap
        self.b, self.s, self.m = wrap(b), wrap(s), wrap(m)
        self.tens = wrap(self.s * 10)

    def step(self, first: bool) -> tuple[int, bool, bool]:
        w = self.wrap
        q = _jdiv(self.b, self.s)
        self.b = w(10 * _jrem(self.b, self.s))
        self.m = w(self.m * 10)
        if not first and self.m <= 0:
            return q, True, True
        return q, self.b < self.m, w(self.b + self.m) > self.tens

    def low_digit_difference(self, low: bool, high: bool) -> int:
        return self.wrap(self.wrap(self.b << 1) - self.tens)


class _BigDigits:
    """Digit generation with arbitrary precision (FDBigInteger); here ``high`` is ``b + m >= 10·s``."""

    def __init__(self, b: int, s: int, m: int) -> None:
        self.b, self.s, self.m = b, s, m
        self.tens = s * 10

    def step(self, first: bool) -> tuple[int, bool, bool]:
        q, r = divmod(self.b, self.s)
        self.b = r * 10
        self.m *= 10
        return q, self.b < self.m, self.b + self.m >= self.tens

    def low_digit_difference(self, low: bool, high: bool) -> int:
        return (self.b << 1) - self.tens if (high and low) else 0


def _jdiv(a: int, b: int) -> int:
    """JVM integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _jrem(a: int, b: int) -> int:
    """JVM remainder (sign of the dividend)."""
    return a - _jdiv(a, b) * b


def _roundup(digits: list[int], dec_exponent: int) -> int:
    """FloatingDecimal.roundup: propagate a carry; an all-nines run becomes a single leading 1."""
    i = len(digits) - 1
    q = digits[i]
    if q == 9:
        while q == 9 and i > 0:
            digits[i] = 0
            i -= 1
            q = digits[i]
        if q == 9:
            digits[0] = 1
            return dec_exponent + 1
    digits[i] = q + 1
    return dec_exponent


def _develop_long_digits(value: int, insignificant: int) -> tuple[list[int], int]:
    dec_exponent = 0
    if insignificant:
        pow10 = 10**insignificant
        residue = value % pow10
        value //= pow10
        dec_exponent += insignificant
        if residue >= pow10 >> 1:
            value += 1
    text = str(value)
    stripped = text.rstrip("0")
    dec_exponent += len(text) - len(stripped)
    digits = [int(c) for c in stripped]
    return digits, dec_exponent + len(digits)


def _java_format(negative: bool, digits: list[int], dec_exponent: int) -> str:
    """FloatingDecimal.getChars: plain form for 1e-3 <= |x| < 1e7, else d.dddE±n."""
    chars = "".join(chr(48 + d) for d in digits)
    n = len(chars)
    sign = "-" if negative else ""
    if 0 < dec_exponent < 8:
        whole = chars[:dec_exponent]
        if n < dec_exponent:
            return f"{sign}{whole}{'0' * (dec_exponent - n)}.0"
        frac = chars[dec_exponent:] or "0"
        return f"{sign}{whole}.{frac}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{chars}"
    mantissa = chars[0] + "." + (chars[1:] or "0")
    exponent = dec_exponent - 1
    return f"{sign}{mantissa}E{exponent}"


def java_double_to_string(d: float) -> str:
    """``java.lang.Double.toString(d)`` as printed by Java 17 (not always the shortest repr)."""
    d = float(d)
    if math.isnan(d):
        return "NaN"
    bits = struct.unpack(">Q", struct.pack(">d", d))[0]
    negative = bool(bits >> 63)
    if math.isinf(d):
        return "-Infinity" if negative else "Infinity"
    fract = bits & _SIGNIF_MASK
    bin_exp = (bits >> _EXP_SHIFT) & 0x7FF
    if bin_exp == 0:
        if fract == 0:
            return "-0.0" if negative else "0.0"
        leading_zeros = 64 - fract.bit_length()
        shift = leading_zeros - (63 - _EXP_SHIFT)
        fract <<= shift
        bin_exp = 1 - shift
        n_sig = 64 - leading_zeros
    else:
        fract |= _FRACT_HOB
        n_sig = _EXP_SHIFT + 1
    digits, dec_exponent = _dtoa(bin_exp - 1023, fract, n_sig)
    return _java_format(negative, digits, dec_exponent)


def java_float_to_string(f: float) -> str:
    """``java.lang.Float.toString(f)`` (Java 17) of the float nearest to ``f``."""
    f32 = np.float32(f)
    if np.isnan(f32):
        return "NaN"
    bits = int(f32.view(np.uint32))
    negative = bool(bits >> 31)
    if np.isinf(f32):
        return "-Infinity" if negative else "Infinity"
    fract = bits & 0x7FFFFF
    bin_exp = (bits >> 23) & 0xFF
    if bin_exp == 0:
        if fract == 0:
            return "-0.0" if negative else "0.0"
        leading_zeros = 32 - fract.bit_length()
        shift = leading_zeros - (31 - 23)
        fract <<= shift
        bin_exp = 1 - shift
        n_sig = 32 - leading_zeros
    else:
        fract |= 1 << 23
        n_sig = 24
    digits, dec_exponent = _dtoa(bin_exp - 127, fract << (_EXP_SHIFT - 23), n_sig)
    return _java_format(negative, digits, dec_exponent)


def java_bigdecimal_to_string(unscaled: int, scale: int) -> str:
    """``java.math.BigDecimal.toString()`` of ``unscaled × 10^-scale``.

    Plain notation when ``scale >= 0`` and the adjusted exponent is >= -6, otherwise scientific
    notation with an explicit exponent sign (``1E+3``, ``1.23E-8``).
    """
    negative = unscaled < 0
    coeff = str(abs(unscaled))
    sign = "-" if negative else ""
    if scale == 0:
        return sign + coeff
    adjusted = -scale + (len(coeff) - 1)
    if scale > 0 and adjusted >= -6:
        if len(coeff) > scale:
            return f"{sign}{coeff[:-scale]}.{coeff[-scale:]}"
        return f"{sign}0.{'0' * (scale - len(coeff))}{coeff}"
    mantissa = coeff[0] + ("." + coeff[1:] if len(coeff) > 1 else "")
    exp_sign = "+" if adjusted > 0 else ""
    return f"{sign}{mantissa}E{exp_sign}{adjusted}"


# --------------------------------------------------------------------------------------------
# Jackson compact JSON (as written by qbeast-spark's ObjectMapper and JsonNode.toString)
# --------------------------------------------------------------------------------------------


class JavaFloat(float):
    """A float that Jackson would write through ``Float.toString`` (a Scala ``Float`` field)."""


def _jackson_string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(code)
            out.append(short if short else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jackson_json(value: Any) -> str:
    """Serialize like Jackson's default compact writer: no spaces, insertion order, floats via
    ``Double.toString`` (or ``Float.toString`` for ``JavaFloat``), non-ASCII kept verbatim."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, JavaFloat):
        return _jackson_number(java_float_to_string(value))
    if isinstance(value, float):
        return _jackson_number(java_double_to_string(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_jackson_string(k)}:{jackson_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(jackson_json(v) for v in value) + "]"
    raise TypeError(f"cannot serialize {type(value).__name__} as JSON")


def _jackson_number(text: str) -> str:
    # Jackson quotes non-finite numbers (QUOTE_NON_NUMERIC_NUMBERS is on by default).
    return f'"{text}"' if text in ("NaN", "Infinity", "-Infinity") else text


# --------------------------------------------------------------------------------------------
# Java orderings and Scala 2.12 Searching.binarySearch
# --------------------------------------------------------------------------------------------


def java_double_compare(a: float, b: float) -> int:
    """``java.lang.Double.compare``: -0.0 < 0.0 and NaN above everything (and equal to NaN)."""
    ka, kb = _double_order_key(a), _double_order_key(b)
    return (ka > kb) - (ka < kb)


def _double_order_key(d: float) -> int:
    if math.isnan(d):
        bits = 0x7FF8000000000000
    else:
        bits = struct.unpack(">q", struct.pack(">d", d))[0]
    return bits ^ 0x7FFFFFFFFFFFFFFF if bits < 0 else bits


def double_order_keys(values: np.ndarray) -> np.ndarray:
    """int64 keys whose natural order is ``Double.compare`` order (vector form)."""
    arr = np.asarray(values, dtype=np.float64).copy()
    arr[np.isnan(arr)] = np.nan  # canonical NaN, as doubleToLongBits does
    bits = arr.view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


def scala_binary_search(seq: Sequence[Any], elem: Any, compare: Callable[[Any, Any], int]) -> tuple[bool, int]:
    """Scala 2.12 ``Searching.binarySearch`` on an indexed sequence.

    Returns ``(True, index)`` for ``Found(index)`` and ``(False, point)`` for
    ``InsertionPoint(point)``. The midpoint rule ``from + (to - from - 1) / 2`` decides which of
    several equal elements is found, so it is replicated literally.
    """
    lo, hi = 0, len(seq)
    while lo < hi:
        idx = lo + (hi - lo - 1) // 2
        c = compare(elem, seq[idx])
        if c < 0:
            hi = idx
        elif c > 0:
            lo = idx + 1
        else:
            return True, idx
    return False, lo


def scala_binary_search_many(seq_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vector form of ``scala_binary_search`` over comparable numeric keys.

    ``seq_keys`` are the sequence's order keys and ``keys`` the searched elements' keys (same key
    space, e.g. ``double_order_keys`` or string ranks). Returns ``(found, index)`` arrays with the
    same meaning as the scalar function, computed with per-element lo/hi bounds.
    """
    seq_keys = np.asarray(seq_keys)
    keys = np.asarray(keys)
    n = keys.shape[0]
    lo = np.zeros(n, dtype=np.int64)
    hi = np.full(n, len(seq_keys), dtype=np.int64)
    found = np.zeros(n, dtype=bool)
    index = np.zeros(n, dtype=np.int64)
    live = lo < hi
    while live.any():
        idx = lo + (hi - lo - 1) // 2
        probe = seq_keys[np.where(live, idx, 0)] if len(seq_keys) else keys
        less = live & (keys < probe)
        greater = live & (keys > probe)
        equal = live & ~less & ~greater
        hi = np.where(less, idx, hi)
        lo = np.where(greater, idx + 1, lo)
        found |= equal
        index = np.where(equal, idx, index)
        live = live & ~equal & (lo < hi)
    return found, np.where(found, index, lo)
