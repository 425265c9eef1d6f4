"""Session confs an engine step sets for its duration, when steps overlap on one session (dbt
runs models in threads that share a session)."""
from __future__ import annotations

import pytest

from qbeast.spark.runtime import scoped_confs


class _Conf:
    def __init__(self, values):
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


class _Session:
    def __init__(self, **values):
        self.conf = _Conf(values)


def test_overlapping_blocks_share_the_value_and_the_last_one_restores_the_users():
    spark = _Session(**{"k": "users", "other": "x"})
    first = scoped_confs(spark, {"k": "0", "fresh": "1"})
    first.__enter__()
    second = scoped_confs(spark, {"k": "0", "fresh": "1"})
    second.__enter__()  # starts inside the first: must not take "0" for the user's value
    first.__exit__(None, None, None)
    assert spark.conf.values == {"k": "0", "fresh": "1", "other": "x"}  # the second still writes
    second.__exit__(None, None, None)
    assert spark.conf.values == {"k": "users", "other": "x"}  # the user's, and "fresh" unset


def test_blocks_asking_different_values_at_once_are_refused_and_leave_nothing_held():
    spark = _Session(k="users")
    with scoped_confs(spark, {"k": "0"}):
        with pytest.raises(RuntimeError, match="held at '0'"):
            with scoped_confs(spark, {"j": "1", "k": "5"}):
                pass
        assert spark.conf.values == {"k": "0"}  # "j" was given back
    assert spark.conf.values == {"k": "users"}


def test_a_failing_block_restores_too():
    spark = _Session()
    with pytest.raises(ValueError):
        with scoped_confs(spark, {"k": "0"}):
            raise ValueError("boom")
    assert spark.conf.values == {}
