"""The suite's cheaper versions of two dbt internals (tests/dbt_speedups.py) give what dbt's own
give: the module that registered a behavior flag, and the bytes of an artifact file."""
from __future__ import annotations

import datetime
import decimal
import inspect
import json

import dbt_speedups
from dbt_common import behavior_flags
from dbt_common.utils.encoding import JSONEncoder


def _original_source() -> str:
    for frame in inspect.stack():
        if module := inspect.getmodule(frame[0]):
            if module.__name__ != behavior_flags.__name__:
                return module.__name__
    return "Unknown"


def test_both_are_installed_on_the_installed_dbt():
    assert dbt_speedups.install() == ["behavior flag source", "artifact writes"]


def test_the_lookup_names_the_module_that_registers_a_flag():
    dbt_speedups.install()
    rendered = behavior_flags.BehaviorFlagRendered(
        {"name": "some_flag", "default": False, "description": "a flag"}, {})
    # the flag was registered from this test module, as inspect's walk says too
    assert rendered._behavior_change_event.flag_source == __name__ == _original_source()
    named = behavior_flags.BehaviorFlagRendered(
        {"name": "other", "default": False, "description": "d", "source": "dbt-x"}, {})
    assert named._behavior_change_event.flag_source == "dbt-x"


def test_an_artifact_is_written_byte_for_byte_as_dbt_writes_it(tmp_path):
    data = {"metadata": {"generated_at": datetime.datetime(2026, 1, 2, 3, 4, 5, 6),
                         "dbt_version": "1.11", "env": {}},
            "nodes": {f"model.p.m{i}": {"name": f"m{i}", "é": "ünïcode \"quoted\"\n",
                                        "rows": i, "ratio": i / 3, "cost": decimal.Decimal("1.5"),
                                        "tags": ["a", None, True], "day": datetime.date(2026, 1, i + 1)}
                      for i in range(5)}}
    original = tmp_path / "original.json"
    with open(original, "w", encoding="utf-8") as f:  # what dbt_common's write_json does
        json.dump(data, f, cls=JSONEncoder)
    assert dbt_speedups.write_json(str(tmp_path / "ours.json"), data) is True
    assert (tmp_path / "ours.json").read_bytes() == original.read_bytes()
