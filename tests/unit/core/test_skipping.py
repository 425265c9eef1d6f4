"""Skipping-index building blocks: value hashing, entries, the index file codec, pruning masks."""
from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from qbeast.core import expressions as ex
from qbeast.core.skipping import (
    DEFAULT_FUSE_FPP,
    Entry,
    IndexSpec,
    bloom_size,
    build_entry,
    decode_index_arrays,
    decode_index_file,
    declared,
    encode_declaration,
    encode_index_file,
    parse_declaration,
)
from qbeast.core.skipping_pruning import ColumnBatch, IndexView, may_match
from qbeast.core.value_hash import hash_values, literal_array, literal_hashes
from qbeast.errors import FormatError, InvalidOptionError

DAY_MS = 86_400_000


@pytest.mark.parametrize("type_name, arrow_type, values, literal", [
    ("byte", pa.int8(), [1, -5, None], -5),
    ("short", pa.int16(), [300, 7], 300),
    ("integer", pa.int32(), [1, 2, 2**31 - 1], 2**31 - 1),
    ("long", pa.int64(), [2**40, -(2**62)], -(2**62)),
    ("string", pa.string(), ["Apple", "apple", "", "a" * 37, None], "a" * 37),
    ("string", pa.large_string(), ["ÄÖü é", "x"], "ÄÖü é"),
    ("date", pa.date32(), [dt.date(2024, 1, 31), dt.date(1969, 12, 31)], dt.date(1969, 12, 31)),
    ("decimal(10,2)", pa.decimal128(10, 2), [decimal.Decimal("12.34"), decimal.Decimal("-0.05")],
     decimal.Decimal("-0.05")),
])
def test_a_literal_hashes_like_the_same_value_written(type_name, arrow_type, values, literal):
    written, has_null = hash_values(pa.array(values, arrow_type), type_name)
    assert has_null == (None in values)
    canonical = ex.EqualTo("c", literal).value  # what a predicate carries
    probe = literal_hashes(type_name, [canonical])
    assert probe is not None and probe[0] in written
    position = [v for v in values if v is not None].index(literal)
    assert written[position] == probe[0]


def test_hashes_tell_case_and_neighbours_apart_and_ignore_chunking():
    strings = pa.chunked_array([["Apple", "apple"], ["APPLE", "apples", "b" * 9, "b" * 8]])
    hashes, _ = hash_values(strings, "string")
    assert len(set(hashes.tolist())) == 6
    whole, _ = hash_values(pa.array(strings.to_pylist()), "string")
    assert whole.tolist() == hashes.tolist()
    ints, _ = hash_values(pa.array(np.arange(100_000), pa.int64()), "long")
    assert len(np.unique(ints)) == 100_000
    sliced, _ = hash_values(pa.array(["x", "yy", "zzz"]).slice(1), "string")
    assert sliced.tolist() == hash_values(pa.array(["yy", "zzz"]), "string")[0].tolist()


def test_literals_that_are_not_exact_in_the_column_type_do_not_prune():
    assert literal_array("date", 5 * DAY_MS + 1) is None  # a timestamp literal, not a date
    assert literal_array("integer", 1.5) is None
    assert literal_array("decimal(10,1)", 1.55) is None  # not representable at scale 1
    assert literal_array("decimal(20,2)", 1.5) is None  # a float cannot carry 20 digits
    assert literal_array("string", 5) is None
    assert literal_hashes("integer", [1, 1.5]) is None
    assert literal_array("decimal(10,2)", 1.5).to_pylist() == [decimal.Decimal("1.50")]


def test_declarations_are_checked_against_the_table():
    types = {"order_id": ("order_id", "long"), "status": ("Status", "string"),
             "price": ("price", "double")}
    specs = parse_declaration({"order_id": "bloom", "STATUS": {"kind": "values", "max_values": 8}},
                              types)
    assert specs == (IndexSpec("order_id", "bloom"), IndexSpec("Status", "values", max_values=8))
    assert declared({"qbeast.skippingIndexes": encode_declaration(specs)}) == specs
    with pytest.raises(InvalidOptionError, match="'nope' is not in the table.*order_id"):
        parse_declaration({"nope": "bloom"}, types)
    with pytest.raises(InvalidOptionError, match="type double.*indexable types: tinyint"):
        parse_declaration({"price": "values"}, types)
    with pytest.raises(InvalidOptionError, match="unknown index kind 'minmax'; allowed"):
        parse_declaration({"order_id": "minmax"}, types)
    with pytest.raises(InvalidOptionError, match="fpp must be a number in"):
        parse_declaration({"order_id": {"kind": "bloom", "fpp": 2}}, types)
    fuse = parse_declaration({"order_id": "FUSE"}, types)
    assert fuse == (IndexSpec("order_id", "fuse", fpp=DEFAULT_FUSE_FPP),)
    assert declared({"qbeast.skippingIndexes": encode_declaration(fuse)}) == fuse
    with pytest.raises(InvalidOptionError, match=r"unknown parameter\(s\) \['max_values'\] for a fuse"):
        parse_declaration({"order_id": {"kind": "fuse", "max_values": 8}}, types)


def _entries(spec: IndexSpec, files: dict[str, list], type_name: str = "long") -> dict:
    entries = {}
    for path, values in files.items():
        hashes, nulls = hash_values(pa.array(values, pa.int64()), type_name)
        entries[path] = {spec.column: build_entry(spec, type_name, hashes, nulls)}
    return entries


def _view(index_files: dict[str, dict]) -> IndexView:
    """The view planning builds of index files (name -> entries), through the file codec."""
    return IndexView({name: decode_index_arrays(encode_index_file(entries))
                      for name, entries in index_files.items()})


def _batch(spec: IndexSpec, files: dict[str, list], type_name: str = "long") -> tuple[ColumnBatch, dict]:
    """The batch of ``spec``'s column over ``files`` split into two index files, and each
    file's row."""
    paths = list(files)
    half = {p: files[p] for p in paths[: len(paths) // 2]}
    rest = {p: files[p] for p in paths[len(paths) // 2:]}
    view = _view({"i1": _entries(spec, half, type_name), "i2": _entries(spec, rest, type_name)})
    rows = {**view.rows["i1"], **view.rows["i2"]}
    return view.batch(spec.column, type_name), rows


@pytest.mark.parametrize("spec", [IndexSpec("c", "values"), IndexSpec("c", "bloom"),
                                  IndexSpec("c", "fuse", fpp=0.002)])
def test_an_entry_never_misses_a_value_its_file_holds(spec):
    rng = np.random.default_rng(7)
    files = {f"f{i}": rng.integers(0, 10**9, 200).tolist() for i in range(50)}
    batch, rows = _batch(spec, files)
    for path, values in files.items():
        hashes = literal_hashes("long", values)
        assert hashes is not None
        for h in hashes:
            assert batch.may_contain(np.array([h]))[rows[path]]
    absent = literal_hashes("long", rng.integers(2 * 10**9, 3 * 10**9, 1000).tolist())
    assert absent is not None
    false_hits = sum(int(batch.may_contain(np.array([h])).sum()) for h in absent)
    rate = false_hits / (1000 * len(files))
    assert rate == 0.0 if spec.kind == "values" else rate < 0.03
    if spec.kind == "fuse":
        assert rate < 0.008  # 2^-9 = 0.2% expected


def test_fuse_filters_of_other_shapes_and_empty_ones_are_probed_together():
    rng = np.random.default_rng(5)
    files = {f"f{i}": rng.integers(0, 10**9, 7 + 300 * i).tolist() for i in range(8)}
    files["empty"] = [None, None]
    wide = dict(list(files.items())[:4])
    narrow = dict(list(files.items())[4:])
    view = _view({"wide": _entries(IndexSpec("c", "fuse", fpp=1e-4), wide),
                  "narrow": _entries(IndexSpec("c", "fuse", fpp=0.2), narrow)})
    batch = view.batch("c", "long")
    assert batch.kind == "fuse"
    rows = {**view.rows["wide"], **view.rows["narrow"]}
    for path, values in files.items():
        hashes = literal_hashes("long", [v for v in values if v is not None])
        assert hashes is not None and all(batch.may_contain(np.array([h]))[rows[path]] for h in hashes)
    absent = literal_hashes("long", rng.integers(2 * 10**9, 3 * 10**9, 400).tolist())
    assert absent is not None
    hits = np.array([batch.may_contain(np.array([h])) for h in absent]).mean(axis=0)
    assert hits[rows["empty"]] == 0.0  # no value, no false positive
    assert max(hits[rows[p]] for p in wide) < 0.01  # 14-bit fingerprints
    assert 0.05 < np.mean([hits[rows[p]] for p in narrow if p != "empty"]) < 0.4  # 3 bits: 1/8
    assert batch.may_hold_null()[rows["empty"]] and not batch.may_hold_null()[rows["f0"]]


def test_an_entry_of_a_kind_this_engine_does_not_know_may_match():
    probe = literal_hashes("long", [9])
    assert probe is not None
    known = build_entry(IndexSpec("c", "values"), "long", np.array([1], dtype=np.uint64), False)
    view = _view({"i": {"a": {"c": Entry("cuckoo", "long", False, 1, b"\0" * 8)}, "b": {"c": known}}})
    batch = view.batch("c", "long")
    assert batch.may_contain(probe).tolist() == [True, False]
    assert batch.may_hold_null().tolist() == [True, False]


def test_filters_of_different_sizes_and_probe_counts_are_probed_together():
    rng = np.random.default_rng(3)
    files = {f"f{i}": rng.integers(0, 10**9, 10 + 40 * i).tolist() for i in range(12)}
    view = _view({"strict": _entries(IndexSpec("c", "bloom", fpp=0.001), dict(list(files.items())[:6])),
                  "loose": _entries(IndexSpec("c", "bloom", fpp=0.3), dict(list(files.items())[6:]))})
    batch = view.batch("c", "long")
    assert batch.unused is not None  # the two halves use different probe counts
    rows = {**view.rows["strict"], **view.rows["loose"]}
    for path, values in files.items():
        hashes = literal_hashes("long", values)
        assert hashes is not None and all(batch.may_contain(np.array([h]))[rows[path]] for h in hashes)
    absent = literal_hashes("long", rng.integers(2 * 10**9, 3 * 10**9, 300).tolist())
    assert absent is not None
    hits = np.array([batch.may_contain(np.array([h])) for h in absent]).mean(axis=0)
    assert hits[:6].max() < 0.02 and 0.1 < hits[6:].mean() < 0.5


def test_damaged_entries_are_refused():
    entry = build_entry(IndexSpec("c", "bloom"), "long", np.array([1, 2], dtype=np.uint64), False)
    data = encode_index_file({"a": {"c": replace(entry, bits=entry.bits * 2)}})
    with pytest.raises(FormatError, match="a/c"):
        decode_index_arrays(data)
    data = encode_index_file({"a": {"c": Entry("values", "long", False, 1, b"1234")}})
    with pytest.raises(FormatError, match="a/c"):
        decode_index_arrays(data)
    fuse = build_entry(IndexSpec("c", "fuse"), "long", np.arange(1, 500, dtype=np.uint64), False)
    decode_index_arrays(encode_index_file({"a": {"c": fuse}}))  # whole, it reads
    for damaged in (replace(fuse, bits=17), replace(fuse, bits=0), replace(fuse, segment_length=3),
                    replace(fuse, seed=-1), replace(fuse, segments=2**70),
                    replace(fuse, segments=fuse.segments + 1), replace(fuse, segments=0),
                    replace(fuse, payload=fuse.payload[:-1])):
        with pytest.raises(FormatError, match="a/c|header is malformed"):
            decode_index_arrays(encode_index_file({"a": {"c": damaged}}))


def test_a_value_list_over_its_limit_and_an_unknown_file_may_match():
    spec = IndexSpec("c", "values", max_values=3)
    batch, rows = _batch(spec, {"small": [1, 2, None], "big": [1, 2, 3, 4]})
    probe = literal_hashes("long", [9])
    assert probe is not None
    assert [rows["small"], rows["big"]] == [0, 1]
    assert batch.may_contain(probe).tolist() == [False, True]
    assert batch.may_hold_null().tolist() == [True, False]
    other_type = _view({"i": {"a": {"c": build_entry(spec, "integer", probe, False)}}})
    assert other_type.batch("c", "long").may_contain(probe).tolist() == [True]
    assert other_type.batch("c", "long").kind == ""


def test_the_index_file_codec_round_trips_and_refuses_what_it_cannot_read():
    entries = {"a.parquet": {"c": build_entry(IndexSpec("c", "bloom"), "long",
                                              np.array([1, 2], dtype=np.uint64), True)},
               "b%20c.parquet": {"c": Entry("values", "long", False, 1, None)},
               "d.parquet": {"c": build_entry(IndexSpec("c", "fuse"), "long",
                                              np.arange(3, 90, dtype=np.uint64), False)}}
    data = encode_index_file(entries)
    assert decode_index_file(data) == entries
    assert decode_index_file(data[:6] + b"99" + data[8:]) is None  # a future version
    with pytest.raises(FormatError):
        decode_index_file(b"garbage file")
    assert bloom_size(50_000, 0.01)[0] / 50_000 == pytest.approx(9.6, abs=0.1)
    hashes = np.random.default_rng(2).integers(0, 50, 400).astype(np.uint64)
    listed = build_entry(IndexSpec("c", "values", max_values=64), "long", hashes, False)
    assert listed.payload == np.unique(hashes).astype("<u8").tobytes()  # sorted, each once
    assert listed.distinct == len(set(hashes.tolist()))


def test_predicates_prune_per_file_and_per_index():
    bloom = _entries(IndexSpec("id", "bloom"), {"f1": [1, 2], "f2": [3, None], "f3": [5]})
    values = _entries(IndexSpec("kind", "values"), {"f1": [10], "f2": [20], "f3": [10]})
    view = _view({"i1": {path: {**bloom[path], **values[path]} for path in bloom},
                  "gone": {"f5": bloom["f1"]}})
    view.rows["unreadable"] = {}  # an index file that could not be read covers no file
    names = ["i1", "i1", "i1", None, "unreadable", "i1"]
    paths = ["f1", "f2", "f3", "f4", "f5", "f6"]  # f6: a file its index file does not cover
    columns = {"id": "long", "kind": "long"}

    def mask(predicate, only=None):
        return view.answers(may_match(predicate, view, columns, only=only), names, paths)

    assert mask(ex.EqualTo("id", 3)) == [False, True, False, True, True, True]
    assert mask(ex.In("id", (1, 5))) == [True, False, True, True, True, True]
    assert mask(ex.IsNull("id")) == [False, True, False, True, True, True]
    assert mask(ex.Or(ex.EqualTo("id", 1), ex.EqualTo("kind", 20)))[:3] == [True, True, False]
    assert mask(ex.And(ex.EqualTo("id", 1), ex.EqualTo("kind", 20)))[:3] == [False, False, False]
    assert mask(ex.Not(ex.EqualTo("id", 1))) == [True] * 6
    assert mask(ex.GreaterThan("id", 100)) == [True] * 6
    assert mask(ex.EqualTo("kind", 10), only="id") == [True] * 6
    assert view.answers(may_match(ex.EqualTo("id", 1), view, columns), ["gone"], ["f5"]) == [True]
    assert view.answers(may_match(ex.EqualTo("id", 9), view, columns), ["gone"], ["f5"]) == [False]
