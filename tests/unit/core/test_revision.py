"""Revision JSON, configuration keys, staging and the new-revision decision (FORMAT §3.8, §4)."""
from __future__ import annotations

import json
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

from qbeast.core.revision import (
    LAST_REVISION_KEY,
    Revision,
    revisions_from_configuration,
)

SPEC_EXAMPLE = (
    '{"revisionID":12,"timestamp":12,"tableID":"test","desiredCubeSize":100,"columnTransformers":'
    '[{"className":"io.qbeast.core.transform.LinearTransformer","columnName":"test1","dataType":"DoubleDataType"}],'
    '"transformations":[{"className":"io.qbeast.core.transform.LinearTransformation","minNumber":0.0,'
    '"maxNumber":10.0,"nullValue":5.0,"orderedDataType":"DoubleDataType"}]}'
)


def _fixture_configurations(root):
    """Every metaData.configuration in the fixtures' JSON commits and checkpoint parquet files."""
    configs = []
    for path in sorted(root.glob("*/_delta_log/*.json")):
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                configs.append((path, action["metaData"]["configuration"]))
    for path in sorted(root.glob("*/_delta_log/*.checkpoint.parquet")):
        for row in pq.read_table(path, columns=["metaData"]).column("metaData").to_pylist():
            if row is not None:
                configs.append((path, dict(row["configuration"])))
    return configs


def test_spec_example_round_trips_byte_for_byte():
    revision = Revision.from_json(SPEC_EXAMPLE)
    assert revision.revision_id == 12 and revision.columns == ["test1"]
    assert revision.to_json() == SPEC_EXAMPLE


def test_every_fixture_revision_reencodes_identically(qbeast_fixtures):
    configs = _fixture_configurations(qbeast_fixtures)
    assert len(configs) >= 8
    checked = 0
    for path, configuration in configs:
        revisions = revisions_from_configuration(configuration)
        assert int(configuration[LAST_REVISION_KEY]) in revisions, path
        for key, text in configuration.items():
            if key.startswith("qbeast.revision."):
                revision = revisions[int(key.rsplit(".", 1)[1])]
                assert revision.to_json() == text, path
                assert json.loads(revision.to_json()) == json.loads(text)
                checked += 1
    assert checked >= 16
