"""Binary fuse filters: set membership at about 1.1 × ``b`` bits per value for a false-positive
rate of ``2^-b``, against 1.44 × ``b`` for a Bloom filter (Graf and Lemire, "Binary Fuse
Filters", 2022).

Why here: a skipping index on a high-cardinality column must stay a small part of the table
(bytes per value) while a point lookup touches few files besides the one holding the value
(false positives per file). At the same size a fuse filter has several times fewer false
positives than a Bloom filter; it cannot take values after it is built, which a data file's
index never needs.

The filter: an array of ``(segments + 3) × segment_length`` ``b``-bit fingerprints. A value's
64-bit hash picks a run of four consecutive segments and one slot in each; the XOR of the four
slots equals the value's fingerprint. Building solves those equations by peeling (a slot only
one value uses is set last); here all slots that can be peeled at once are peeled together, so
the work is numpy rounds (about 200 for 60,000 values; about 10.5 ms of CPU, of which 5.5 in
peeling), not a Python loop per value. Probing many filters for one value (planning asks every file of a table at once) is
vectorized over the filters.

Plain numpy; the on-disk layout of an entry is in docs/skipping.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qbeast.core.value_hash import mix64

#: Slots per value (four segments per value: smaller than three at the same build success).
ARITY = 4
MAX_FINGERPRINT_BITS = 16
_MAX_SEGMENT_BITS = 16  # slot offsets are 16-bit lanes of one mixed word
_MAX_ATTEMPTS = 64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_U32 = np.uint64(32)
_U16 = np.uint64(16)
_LANE = np.arange(ARITY, dtype=np.int64)


@dataclass(frozen=True)
class FuseShape:
    """The parameters a probe needs besides the fingerprints: ``seed`` of the hash remix,
    ``segment_length`` (a power of two), ``segments`` (the runs a value may start at) and
    ``fingerprint_bits``."""

    seed: int
    segment_length: int
    segments: int
    fingerprint_bits: int

    @property
    def slots(self) -> int:
        return (self.segments + ARITY - 1) * self.segment_length

    @property
    def payload_bytes(self) -> int:
        """Bytes of the packed fingerprints."""
        return -(-self.slots * self.fingerprint_bits // 8)


def fingerprint_bits(fpp: float) -> int:
    """The fingerprint width whose false-positive rate ``2^-b`` is at most ``fpp``."""
    return min(MAX_FINGERPRINT_BITS, max(1, math.ceil(-math.log2(fpp))))


def _sizes(n: int) -> tuple[int, int]:
    """``(segment_length, segments)`` for ``n`` values: the slots of the 4-wise binary fuse
    filter's sizing rule (``n × max(1.075, 0.77 + 0.305 × ln(600000) / ln(n))``) in segments
    twice as long as its ``2^floor(log_2.91(n) - 0.5)``. Half as many segments take about half
    the peeling rounds (175 instead of 310 at 60,000 values; 10-20% less build time, the rest
    being work per value) for under 1% more slots, and peeled on the first seed in every trial
    from 50 to 200,000 values (the rule's own length failed 7 of 30 at 100 values)."""
    n = max(n, 2)
    length = 1 << min(_MAX_SEGMENT_BITS, max(0, math.floor(math.log(n) / math.log(2.91) - 0.5) + 1))
    factor = max(1.075, 0.77 + 0.305 * math.log(600_000) / math.log(n))
    capacity = round(n * factor)
    segments = max(1, -(-capacity // length) - (ARITY - 1))
    return length, segments


def _remix(hashes: np.ndarray, seed: np.ndarray | np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """Two mixed words per hash: ``first`` picks the run and the fingerprint, ``second`` the
    four offsets (16-bit lanes)."""
    with np.errstate(over="ignore"):
        first = mix64(hashes ^ (np.asarray(seed, dtype=np.uint64) * _GOLDEN))
        second = mix64(first + _GOLDEN)
    return first, second


def positions(hashes: np.ndarray, seed: np.ndarray | np.uint64, segment_length: np.ndarray | np.uint64,
              segments: np.ndarray | np.uint64, bits: np.ndarray | np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """``(slots, fingerprint)`` of ``hashes`` (broadcasting over filters' parameters): slots has
    one more trailing axis of length :data:`ARITY`."""
    first, second = _remix(np.asarray(hashes, dtype=np.uint64), seed)
    with np.errstate(over="ignore"):
        start = ((first >> _U32) * np.asarray(segments, dtype=np.uint64)) >> _U32
        fingerprint = first & ((np.uint64(1) << np.asarray(bits, dtype=np.uint64)) - np.uint64(1))
    # the four offsets are the 16-bit lanes of ``second``, low lane first: its little-endian
    # uint16 view (one copy, no shifts)
    lanes = np.ascontiguousarray(second, dtype="<u8").view("<u2").reshape(*np.shape(second), ARITY)
    length = np.asarray(segment_length, dtype=np.int64)[..., None]
    return (start.astype(np.int64)[..., None] + _LANE) * length + (lanes & (length - 1)), fingerprint


def _peel(slots: np.ndarray, size: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
    """The peeling order of the values whose slots are ``slots`` (values × ARITY) in a filter
    of ``size`` slots: rounds of ``(values, the slot each is set by, their slots flattened)``;
    None when some values cannot be peeled (the shape needs another seed)."""
    n = len(slots)
    flat = slots.ravel()
    count = np.bincount(flat, minlength=size)
    # per slot the sum of the values (their numbers) in it: where one is left, the sum is that one
    # (float64 sums of numbers below 2^32 are exact; bincount is many times faster than add.at)
    total = np.bincount(flat, weights=np.repeat(np.arange(n, dtype=np.float64), ARITY),
                        minlength=size).astype(np.int64)
    rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    order = np.arange(size, dtype=np.int64)
    first_seen = np.empty(n, dtype=np.int64)
    peeled = 0
    candidates = np.flatnonzero(count == 1)
    while candidates.size:
        values = total[candidates]
        # a value alone in two slots is peeled once (by the last write; no sort needed)
        first_seen[values] = order[:values.size]
        once = first_seen[values] == order[:values.size]
        if not once.all():
            values, candidates = values[once], candidates[once]
        touched = np.take(slots, values, axis=0).ravel()  # many times faster than slots[values]
        rounds.append((values, candidates, touched))
        peeled += values.size
        np.subtract.at(count, touched, 1)
        np.subtract.at(total, touched, np.repeat(values, ARITY))
        candidates = touched[count[touched] == 1]
    return rounds if peeled == n else None


def _assign(rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]], fingerprints: np.ndarray,
            size: int) -> np.ndarray:
    """The slots' fingerprints (16-bit lanes), set in the reverse of the peeling order."""
    table = np.zeros(size, dtype=np.uint16)
    small = fingerprints.astype(np.uint16)
    for values, where, touched in reversed(rounds):
        # each slot set here is used by no value set later: its XOR with the others is final
        # (the slot itself still holds 0, so XOR-ing all four slots is the same)
        stored = table[touched].reshape(-1, ARITY)
        table[where] = stored[:, 0] ^ stored[:, 1] ^ stored[:, 2] ^ stored[:, 3] ^ small[values]
    return table


def _pack(table: np.ndarray, bits: int) -> bytes:
    """Each slot's low ``bits`` bits end to end, little-endian bit order."""
    bits16 = np.unpackbits(table.astype("<u2").view(np.uint8), bitorder="little").reshape(len(table), 16)
    return np.packbits(bits16[:, :bits].ravel(), bitorder="little").tobytes()


def build(hashes: np.ndarray, fpp: float) -> tuple[FuseShape, bytes]:
    """The filter of the distinct 64-bit ``hashes`` at false-positive rate at most ``fpp``:
    its shape and packed fingerprints (little-endian bit order, ``fingerprint_bits`` per slot).

    A shape that does not peel (rare, more so for small sets) is tried again with the next
    seed, and from the fifth seed on with one more segment per try."""
    keys = np.asarray(hashes, dtype=np.uint64)
    length, segments = _sizes(len(keys))
    bits = fingerprint_bits(fpp)
    for seed in range(_MAX_ATTEMPTS):
        shape = FuseShape(seed, length, segments + max(0, seed - 3), bits)
        if not len(keys):
            return shape, bytes(shape.payload_bytes)
        slots, fingerprints = positions(keys, np.uint64(seed), np.uint64(length),
                                        np.uint64(shape.segments), np.uint64(bits))
        rounds = _peel(slots, shape.slots)
        if rounds is not None:
            return shape, _pack(_assign(rounds, fingerprints, shape.slots), bits)
    raise RuntimeError(f"binary fuse filter of {len(keys)} values did not build in {_MAX_ATTEMPTS} attempts")


def read_slots(body: np.ndarray, starts: np.ndarray, slots: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """The fingerprints at ``slots`` of filters whose packed fingerprints begin at byte ``starts``
    of ``body`` (broadcasting); ``body`` must have two spare bytes past its last filter."""
    bit = slots.astype(np.uint64) * bits.astype(np.uint64)
    at = starts + (bit >> np.uint64(3)).astype(np.int64)
    word = (body[at].astype(np.uint64) | (body[at + 1].astype(np.uint64) << np.uint64(8))
            | (body[at + 2].astype(np.uint64) << _U16))
    return (word >> (bit & np.uint64(7))) & ((np.uint64(1) << bits.astype(np.uint64)) - np.uint64(1))


def may_contain(body: np.ndarray, starts: np.ndarray, shapes: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                hashes: np.ndarray) -> np.ndarray:
    """Per filter (``starts`` and ``shapes`` = seeds, segment lengths, segments, fingerprint
    bits, one entry each): whether it may hold one of ``hashes``. ``body`` as for
    :func:`read_slots`."""
    seeds, lengths, segments, bits = shapes
    hit = np.zeros(len(starts), dtype=bool)
    for h in np.asarray(hashes, dtype=np.uint64):
        slots, fingerprint = positions(h, seeds, lengths, segments, bits)
        stored = read_slots(body, starts[:, None], slots, bits[:, None])
        hit |= np.bitwise_xor.reduce(stored, axis=1) == fingerprint
    return hit
