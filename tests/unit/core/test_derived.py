"""Expressions skipping indexes may be declared on: the declaration's forms, and values computed
only where they equal Spark's (qbeast.core.derived). Spark's own values for the same inputs are
checked in tests/spark/test_skipping_expressions.py."""
from __future__ import annotations

import pyarrow as pa
import pytest

from qbeast.core import expressions as ex
from qbeast.core.derived import Call, evaluate, parse_call
from qbeast.core.skipping import parse_declaration
from qbeast.errors import InvalidOptionError

TYPES = {"email": ("Email", "string"), "n": ("n", "long")}


@pytest.mark.parametrize("text, call", [
    ("lower(email)", Call("lower", "email")),
    ("UPPER( `e``mail` )", Call("upper", "e`mail")),
    ("btrim(email)", Call("trim", "email")),
    ("left(email, 3)", Call("substring", "email", (1, 3))),
    ("substr(email, 2, 5)", Call("substring", "email", (2, 5))),
    ("substring(email, 2)", Call("substring", "email", (2, 2**31 - 1))),
    ("email", None),
])
def test_declaration_keys(text, call):
    assert parse_call(text) == call


@pytest.mark.parametrize("text", ["md5(email)", "lower(email, 1)", "substring(email, 0, 3)",
                                  "substring(email, -2, 3)", "lower(upper(email))", "left(email)"])
def test_other_expressions_are_refused_naming_the_allowed_ones(text):
    with pytest.raises(InvalidOptionError, match=r"allowed: lower\(c\), upper\(c\), trim\(c\)"):
        parse_call(text)


def test_declarations_resolve_the_column_and_check_its_type():
    (spec,) = parse_declaration({"LOWER(email)": "bloom"}, TYPES)
    assert spec.column == "lower(Email)" and spec.source == "Email" and spec.call == Call("lower", "Email")
    with pytest.raises(InvalidOptionError, match="needs a string column, but 'n' has type long"):
        parse_declaration({"lower(n)": "values"}, TYPES)
    with pytest.raises(InvalidOptionError, match="names a column twice"):
        parse_declaration({"left(email, 2)": "values", "substring(email, 1, 2)": "bloom"}, TYPES)
    assert [s.column for s in parse_declaration({"email": "bloom", "lower(email)": "bloom"}, TYPES)] == \
        ["Email", "lower(Email)"]


def test_values_are_computed_only_where_they_equal_sparks():
    ascii_values = pa.array(["Ann@X.org", None, "  b c\t ", "abc"])
    assert evaluate(Call("lower", "e"), ascii_values).to_pylist() == ["ann@x.org", None, "  b c\t ", "abc"]
    assert evaluate(Call("upper", "e"), ascii_values).to_pylist() == ["ANN@X.ORG", None, "  B C\t ", "ABC"]
    assert evaluate(Call("trim", "e"), ascii_values).to_pylist() == ["Ann@X.org", None, "b c\t", "abc"]
    assert evaluate(Call("rtrim", "e"), ascii_values).to_pylist()[2] == "  b c\t"
    # non-ASCII: Spark hands the string to Java's case mapping; this file's entry is "unknown"
    assert evaluate(Call("lower", "e"), pa.array(["abc", "\u212Aate"])) is None
    assert evaluate(Call("upper", "e"), pa.array(["stra\u00dfe"])) is None
    # substring counts code points; spaces are trimmed byte-wise next to any character
    mixed = pa.array(["h\u00e9llo", " \u00e9 ", None])
    assert evaluate(Call("substring", "e", (2, 3)), mixed).to_pylist() == ["\u00e9ll", "\u00e9 ", None]
    assert evaluate(Call("trim", "e"), mixed).to_pylist() == ["h\u00e9llo", "\u00e9", None]
    invalid = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(b"\x00\x00\x00\x00\x02\x00\x00\x00"),
                                                     pa.py_buffer(b"\xff\xfe")])
    assert evaluate(Call("substring", "e", (1, 1)), invalid) is None


def test_a_call_is_a_subject_no_column_pruning_mistakes_for_a_column():
    from qbeast.core.stats_skipping import file_may_match

    call = Call("lower", "email")
    predicate = ex.And(ex.EqualTo(call, "x"), ex.Not(ex.IsNull(call)))
    assert ex.references(predicate) == {call}
    assert ex.evaluate(predicate, {"email": "X"}) is True
    assert ex.evaluate(predicate, {"email": None}) is False  # unknown AND false
    # a column literally named like the call has statistics that say nothing about the call
    stats = {"numRecords": 5, "minValues": {"lower(email)": "a"}, "maxValues": {"lower(email)": "b"},
             "nullCount": {"lower(email)": 0}}
    assert file_may_match(predicate, stats, {"lower(email)": ("lower(email)", "string")})


def test_collated_string_columns_carry_no_index():
    """Under a collation such as UTF8_LCASE 'A' = 'a' in Spark: hashes of the bytes would prune
    files that hold an equal value."""
    from qbeast.core.skipping import column_types

    schema = {"type": "struct", "fields": [
        {"name": "e", "type": "string", "nullable": True,
         "metadata": {"__COLLATIONS": {"e": "spark.UTF8_LCASE"}}}]}
    types = column_types(schema)
    for declaration in ({"e": "values"}, {"lower(e)": "bloom"}):
        with pytest.raises(InvalidOptionError, match="with a collation"):
            parse_declaration(declaration, types)
