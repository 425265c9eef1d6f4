"""Skipping-index building blocks: value hashing, entries, the index file codec, pruning masks."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

from qbeast.core import expressions as ex
from qbeast.core.skipping import (
    Entry,
    IndexSpec,
    bloom_size,
    build_entry,
    decode_index_file,
    declared,
    encode_declaration,
    encode_index_file,
    parse_declaration,
)
from qbeast.core.skipping_pruning import ColumnBatch, FileRef, may_match
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


def _batch(spec: IndexSpec, files: dict[str, list], type_name: str = "long") -> ColumnBatch:
    entries = {}
    for path, values in files.items():
        hashes, nulls = hash_values(pa.array(values, pa.int64()), type_name)
        entries[path] = build_entry(spec, type_name, hashes, nulls)
    return ColumnBatch(entries, type_name)


@pytest.mark.parametrize("spec", [IndexSpec("c", "values"), IndexSpec("c", "bloom")])
def test_an_entry_never_misses_a_value_its_file_holds(spec):
    rng = np.random.default_rng(7)
    files = {f"f{i}": rng.integers(0, 10**9, 200).tolist() for i in range(50)}
    batch = _batch(spec, files)
    for path, values in files.items():
        hashes = literal_hashes("long", values)
        assert hashes is not None
        for h in hashes:
            assert batch.may_contain(np.array([h]))[batch.rows[path]]
    absent = literal_hashes("long", rng.integers(2 * 10**9, 3 * 10**9, 1000).tolist())
    assert absent is not None
    false_hits = sum(int(batch.may_contain(np.array([h])).sum()) for h in absent)
    rate = false_hits / (1000 * len(files))
    assert rate == 0.0 if spec.kind == "values" else rate < 0.03


def test_a_value_list_over_its_limit_and_an_unknown_file_may_match():
    spec = IndexSpec("c", "values", max_values=3)
    batch = _batch(spec, {"small": [1, 2, None], "big": [1, 2, 3, 4]})
    probe = literal_hashes("long", [9])
    assert probe is not None
    assert batch.may_contain(probe).tolist() == [False, True]
    assert batch.may_hold_null().tolist() == [True, False]
    other_type = ColumnBatch({"a": build_entry(spec, "integer", probe, False)}, "long")
    assert other_type.may_contain(probe).tolist() == [True]


def test_the_index_file_codec_round_trips_and_refuses_what_it_cannot_read():
    entries = {"a.parquet": {"c": build_entry(IndexSpec("c", "bloom"), "long",
                                              np.array([1, 2], dtype=np.uint64), True)},
               "b%20c.parquet": {"c": Entry("values", "long", False, 1, None)}}
    data = encode_index_file(entries)
    assert decode_index_file(data) == entries
    assert decode_index_file(data[:6] + b"99" + data[8:]) is None  # a future version
    with pytest.raises(FormatError):
        decode_index_file(b"garbage file")
    assert bloom_size(50_000, 0.01)[0] / 50_000 == pytest.approx(9.6, abs=0.1)


def test_predicates_prune_per_file_and_per_index():
    bloom = _batch(IndexSpec("id", "bloom"), {"f1": [1, 2], "f2": [3, None], "f3": [5]})
    values = _batch(IndexSpec("kind", "values"), {"f1": [10], "f2": [20], "f3": [10]})
    batches = {("i1", "id"): bloom, ("i1", "kind"): values}
    files = [FileRef("f1", "i1"), FileRef("f2", "i1"), FileRef("f3", "i1"), FileRef("f4", None)]
    columns = {"id": "long", "kind": "long"}

    def source(location, column, type_name):
        return batches.get((location, column))

    def mask(predicate, only=None):
        return may_match(predicate, files, columns, source, only=only).tolist()

    assert mask(ex.EqualTo("id", 3)) == [False, True, False, True]
    assert mask(ex.In("id", (1, 5))) == [True, False, True, True]
    assert mask(ex.IsNull("id")) == [False, True, False, True]
    assert mask(ex.Or(ex.EqualTo("id", 1), ex.EqualTo("kind", 20))) == [True, True, False, True]
    assert mask(ex.And(ex.EqualTo("id", 1), ex.EqualTo("kind", 20))) == [False, False, False, True]
    assert mask(ex.Not(ex.EqualTo("id", 1))) == [True] * 4
    assert mask(ex.GreaterThan("id", 100)) == [True] * 4
    assert mask(ex.EqualTo("kind", 10), only="id") == [True] * 4
