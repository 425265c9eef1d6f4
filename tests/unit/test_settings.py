"""The ``spark.qbeast.*`` settings: one registry, parsed with clear errors, documented in full."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"^spark\.qbeast\.[A-Za-z0-9.]*[A-Za-z0-9]$")


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    def __init__(self, **values: str) -> None:
        self.conf = _Conf({k.replace("_", "."): v for k, v in values.items()})


def test_settings_parse_values_and_name_the_allowed_ones():
    cube = settings.DEFAULT_CUBE_SIZE
    assert cube.read(None) == 5_000_000 and cube.parse("1000") == 1000
    assert settings.ESTIMATION_SAMPLE_ROWS.parse("0") == 0
    assert settings.SHIP_ENGINE.read_from({settings.SHIP_ENGINE.key: " TRUE "}) == "true"
    with pytest.raises(InvalidOptionError, match=f"Spark conf {cube.key} must be a positive integer, got 0"):
        cube.parse("0")
    with pytest.raises(InvalidOptionError, match="must be a positive integer, got 'lots'"):
        settings.BUFFER_CAPACITY.parse("lots")
    with pytest.raises(InvalidOptionError, match="allowed values: auto, true, false") as raised:
        settings.SHIP_ENGINE.parse("maybe")
    assert (raised.value.option, raised.value.value) == (settings.SHIP_ENGINE.key, "maybe")
    assert raised.value.allowed == ["auto", "true", "false"]
    with pytest.raises(InvalidOptionError) as raised:
        cube.parse("-3")
    assert (raised.value.option, raised.value.value, raised.value.allowed) == (cube.key, -3, "a positive integer")
    seconds = settings.SIGNED_URL_SECONDS
    assert seconds.parse("604800") == 604800
    with pytest.raises(InvalidOptionError, match=f"Spark conf {seconds.key} is 604801; allowed: integer "
                                                 "from 60 to 604800") as raised:
        seconds.parse("604801")
    assert raised.value.allowed == "integer from 60 to 604800"
    with pytest.raises(InvalidOptionError, match="must be an integer >= 60, got 59"):
        seconds.parse("59")
    session = _Session(spark_qbeast_index_defaultCubeSize="42")
    assert cube.read(session) == 42 and settings.BUFFER_CAPACITY.read(session) == 100_000


def test_every_setting_is_documented_with_its_default_and_allowed_values():
    doc = (ROOT / "docs" / "settings.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in doc.splitlines()
            if line.startswith("| `spark.qbeast.")}
    assert set(rows) == {s.key for s in SETTINGS}
    for s in SETTINGS:
        assert f"`{s.default}`" in rows[s.key] and s.allowed in rows[s.key] and s.doc in rows[s.key]


def test_setting_keys_are_spelled_only_in_the_registry():
    """A ``spark.qbeast.*`` key written as a literal elsewhere would bypass defaults and checks."""
    registry = ROOT / "qbeast" / "spark" / "settings.py"
    stray = []
    for path in sorted([*(ROOT / "qbeast").rglob("*.py"), *(ROOT / "dbt").rglob("*.py")]):
        if path == registry:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY.match(node.value):
                stray.append(f"{path.relative_to(ROOT)}: {node.value}")
    assert stray == []
