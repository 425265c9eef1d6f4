"""Shared helpers of the format-core tests: revision JSON texts (FORMAT §4.1), parsed with the real Revision.

Tests build revisions from the on-disk JSON form so they exercise the same objects the engine gets
from a Delta log.
"""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

_T = "io.qbeast.core.transform."


def linear(column: str, data_type: str, lo: Any, hi: Any, null: Any) -> tuple[dict, dict]:
    """A linear column: transformer and fitted transformation."""
    return (
        {"className": _T + "LinearTransformer", "columnName": column, "dataType": data_type},
        {
            "className": _T + "LinearTransformation",
            "minNumber": lo,
            "maxNumber": hi,
            "nullValue": null,
            "orderedDataType": data_type,
        },
    )


def hashing(column: str, data_type: str = "StringDataType", null: int = -1628776639) -> tuple[dict, dict]:
    return (
        {"className": _T + "HashTransformer", "columnName": column, "dataType": data_type},
        {"className": _T + "HashTransformation", "nullValue": null},
    )


def histogram(column: str, bins: list[str]) -> tuple[dict, dict]:
    return (
        {"className": _T + "StringHistogramTransformer", "columnName": column, "dataType": "StringDataType"},
        {"className": _T + "StringHistogramTransformation", "histogram": bins},
    )


def quantiles(column: str, data_type: str, values: list[float]) -> tuple[dict, dict]:
    """A numeric quantiles (CDF) column."""
    return (
        {"className": _T + "CDFNumericQuantilesTransformer", "columnName": column,
         "orderedDataType": data_type},
        {"className": _T + "CDFNumericQuantilesTransformation", "quantiles": values,
         "dataType": data_type},
    )


def revision(*columns: tuple[dict, dict], cube_size: int = 100, revision_id: int = 1) -> Any:
    """A real ``qbeast.core.revision.Revision`` parsed from the JSON of these columns."""
    from qbeast.core.revision import Revision  # imported late: only these tests need it

    text = json.dumps(
        {
            "revisionID": revision_id,
            "timestamp": 1700000000000,
            "tableID": "test",
            "desiredCubeSize": cube_size,
            "columnTransformers": [c[0] for c in columns],
            "transformations": [c[1] for c in columns],
        },
        separators=(",", ":"),
    )
    return Revision.from_json(text)


def linear_revision(dimensions: int, cube_size: int = 100) -> Any:
    """A revision of ``dimensions`` double columns x0.. over [0, 1] (coordinate = value)."""
    return revision(
        *(linear(f"x{i}", "DoubleDataType", 0.0, 1.0, 0.5) for i in range(dimensions)),
        cube_size=cube_size,
    )


@pytest.fixture(scope="session")
def revisions() -> SimpleNamespace:
    """The revision builders above, for tests (test modules cannot import each other)."""
    return SimpleNamespace(
        linear=linear, hashing=hashing, histogram=histogram, quantiles=quantiles, revision=revision,
        linear_revision=linear_revision,
    )


@pytest.fixture(scope="session")
def v07_index(qbeast_fixtures) -> Any:
    """IndexStatus of revision 1 of the v07-ecommerce-300k fixture, read from its JSON log.

    The log is parsed with the json module directly, so these tests do not depend on the Delta
    log layer.
    """
    from qbeast.core.blocks import decode_tags
    from qbeast.core.index_status import IndexStatus
    from qbeast.core.revision import Revision

    log = qbeast_fixtures / "v07-ecommerce-300k" / "_delta_log" / "00000000000000000000.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    config = next(a["metaData"]["configuration"] for a in actions if "metaData" in a)
    rev = Revision.from_json(config["qbeast.revision.1"])
    files = []
    for action in actions:
        if "add" in action:
            decoded = decode_tags(action["add"]["tags"])
            assert decoded.revision_id == 1
            files.append((action["add"]["path"], decoded.blocks))
    return IndexStatus.from_files(rev, files)
