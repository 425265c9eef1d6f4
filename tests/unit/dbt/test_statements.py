"""How the session cursor cuts one SQL text into Spark's statements (dbt/adapters/qbeast/statements.py)."""
from __future__ import annotations

import pytest

from dbt.adapters.qbeast.statements import split_statements


@pytest.mark.parametrize("sql, statements", [
    ("select 1", ["select 1"]),
    ("select 1;", ["select 1"]),
    ("set a = 1;\nselect 2", ["set a = 1", "\nselect 2"]),
    ("select ';' as s; select 2", ["select ';' as s", " select 2"]),
    ("select 'it\\'s; fine' as s; select 2", ["select 'it\\'s; fine' as s", " select 2"]),
    ("select 'a''b;c' as s", ["select 'a''b;c' as s"]),
    ('select "x;y" as s', ['select "x;y" as s']),
    ("select 1 as `a;b`", ["select 1 as `a;b`"]),
    ("-- a comment; with a semicolon\nselect 1", ["-- a comment; with a semicolon\nselect 1"]),
    ("/* one; two */ select 1; /* only a comment */", ["/* one; two */ select 1"]),
    ("create function f() returns int language python as $$ return 1; $$; select 2",
     ["create function f() returns int language python as $$ return 1; $$", " select 2"]),
    (";;\n  ;", []),
])
def test_a_text_is_cut_at_the_semicolons_that_end_statements(sql, statements):
    assert split_statements(sql) == statements


def test_a_model_header_before_its_create():
    """What dbt-spark's create_table_as sends when a model has a sql_header."""
    sql = ("/* {\"app\": \"dbt\"} */\ndeclare or replace variable zone string default 'Asia/Kolkata';\n"
           "create table s.m using parquet as select zone as column_name")
    header, create = split_statements(sql)
    assert header.strip().endswith("default 'Asia/Kolkata'")
    assert create.strip() == "create table s.m using parquet as select zone as column_name"
