"""Binary fuse filters: no false negatives, the false-positive rate and size they promise, and
probes of many filters of different shapes at once."""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core import fuse_filter as ff


def _probe(shape: ff.FuseShape, payload: bytes, hashes: np.ndarray) -> np.ndarray:
    """Per hash: whether the one filter may hold it (the planner's probe, one filter)."""
    body = np.concatenate([np.frombuffer(payload, dtype=np.uint8), np.zeros(2, dtype=np.uint8)])
    slots, fingerprint = ff.positions(hashes, np.uint64(shape.seed), np.uint64(shape.segment_length),
                                      np.uint64(shape.segments), np.uint64(shape.fingerprint_bits))
    stored = ff.read_slots(body, np.zeros((1, 1), dtype=np.int64), slots,
                           np.full((1, 1), shape.fingerprint_bits, dtype=np.uint64))
    return np.bitwise_xor.reduce(stored, axis=1) == fingerprint


def _keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.unique(rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64))


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 20_000])
@pytest.mark.parametrize("fpp", [0.5, 0.002, 2**-16])
def test_every_value_is_found_and_others_rarely(n, fpp):
    rng = np.random.default_rng(n)
    keys = _keys(rng, n)
    shape, payload = ff.build(keys, fpp)
    assert len(payload) == shape.payload_bytes
    assert _probe(shape, payload, keys).all()
    others = _keys(rng, 100_000)
    rate = _probe(shape, payload, others).mean()
    expected = 2.0 ** -shape.fingerprint_bits
    assert expected <= fpp
    assert rate < expected * 1.5 + 3 / len(others)


def test_fingerprint_widths_follow_the_rate_asked_for():
    assert [ff.fingerprint_bits(p) for p in (0.5, 0.25, 0.2, 0.002, 0.001, 1e-9)] == [1, 2, 3, 9, 10, 16]


@pytest.mark.parametrize("n, most", [(1000, 13.0), (60_000, 10.5), (300_000, 10.0)])
def test_size_stays_near_1_1_times_the_fingerprint_bits(n, most):
    shape, payload = ff.build(_keys(np.random.default_rng(1), n), 0.002)
    assert shape.fingerprint_bits == 9
    assert 8 * len(payload) / n <= most  # a Bloom filter at 0.2% needs 12.9


def test_a_shape_that_does_not_peel_is_retried_with_new_seeds_and_more_room(monkeypatch):
    keys = _keys(np.random.default_rng(4), 5000)
    monkeypatch.setattr(ff, "_sizes", lambda n: (64, 60))  # 63 × 64 slots for 5000 values: too few
    shape, payload = ff.build(keys, 0.01)
    assert shape.seed > 3 and shape.segments > 60
    assert _probe(shape, payload, keys).all()


def test_many_filters_are_probed_in_one_call():
    rng = np.random.default_rng(9)
    sets = [_keys(rng, n) for n in (5, 800, 3000)]
    built = [ff.build(keys, fpp) for keys, fpp in zip(sets, (0.01, 0.001, 0.3))]
    starts, body = [], bytearray()
    for _, payload in built:
        starts.append(len(body))
        body += payload
    body += bytes(2)
    shapes = tuple(np.array([getattr(s, name) for s, _ in built], dtype=np.uint64)
                   for name in ("seed", "segment_length", "segments", "fingerprint_bits"))
    view = np.frombuffer(bytes(body), dtype=np.uint8)
    for i, keys in enumerate(sets):
        for h in keys[:50]:
            assert ff.may_contain(view, np.array(starts), shapes, np.array([h]))[i]
    assert ff.may_contain(view, np.array(starts), shapes, np.array([], dtype=np.uint64)).tolist() == [False] * 3


_M64 = 2**64 - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _murmur_finalizer(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _M64
    return x ^ (x >> 33)


@pytest.mark.parametrize("seed, length, segments, bits", [(0, 1024, 60, 9), (5, 2, 1, 1), (63, 65536, 3, 16)])
def test_slots_and_fingerprints_follow_the_layout_in_the_docs(seed, length, segments, bits):
    """The probe is the on-disk format (docs/skipping.md): pinned in plain integers, one value at
    a time and many filters at once, so a faster derivation cannot change which slots it reads."""
    hashes = np.random.default_rng(seed).integers(0, 2**64, 20, dtype=np.uint64)
    expected_slots, expected_fingerprints = [], []
    for h in hashes.tolist():
        first = _murmur_finalizer(h ^ (seed * _GOLDEN & _M64))
        second = _murmur_finalizer((first + _GOLDEN) & _M64)
        start = ((first >> 32) * segments) >> 32
        expected_slots.append([(start + j) * length + ((second >> (16 * j)) & (length - 1)) for j in range(4)])
        expected_fingerprints.append(first & ((1 << bits) - 1))
    slots, fingerprints = ff.positions(hashes, np.uint64(seed), np.uint64(length), np.uint64(segments),
                                       np.uint64(bits))
    assert slots.tolist() == expected_slots and fingerprints.tolist() == expected_fingerprints
    params = [np.full(3, p, dtype=np.uint64) for p in (seed, length, segments, bits)]
    one, fingerprint = ff.positions(hashes[7], *params)  # one value, three filters (planning)
    assert one.tolist() == [expected_slots[7]] * 3 and fingerprint.tolist() == [expected_fingerprints[7]] * 3
